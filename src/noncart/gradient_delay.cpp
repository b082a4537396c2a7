#include "noncart/gradient_delay.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace radstream {

namespace {

using cfloat = std::complex<float>;

// A spoke's line: unit direction n, sample spacing dk, the fractional sample s0 where it passes k = 0 (along
// n).
struct Line {
  double nx = 0, ny = 0, dk = 0, s0 = 0, theta = 0;
};

Line line_of(std::span<const float> traj, int samples, int p) {
  const float* t = traj.data() + std::size_t(p) * std::size_t(samples) * 2;
  const double dx = double(t[2 * (samples - 1)]) - t[0], dy = double(t[2 * (samples - 1) + 1]) - t[1];
  const double len = std::hypot(dx, dy);
  if (!(len > 0)) throw InputError(fmt::format("spoke {} has no length: its trajectory is one point", p));
  Line l;
  l.nx = dx / len;
  l.ny = dy / len;
  l.dk = len / double(samples - 1);
  l.s0 = -(double(t[0]) * l.nx + double(t[1]) * l.ny) / l.dk;
  l.theta = std::atan2(l.ny, l.nx);
  return l;
}

// Band-limited interpolation of one coil's spoke at a fractional sample (Lanczos, 6 lobes).
cfloat interp(const cfloat* y, int samples, double s) {
  constexpr int a = 6;
  const int base = int(std::floor(s));
  std::complex<double> acc = 0;
  double wsum = 0;
  for (int k = base - a + 1; k <= base + a; ++k) {
    if (k < 0 || k >= samples) continue;
    const double x = s - k;
    const double w =
        std::abs(x) < 1e-12 ? 1.0 : a * std::sin(M_PI * x) * std::sin(M_PI * x / a) / (M_PI * M_PI * x * x);
    acc += w * std::complex<double>(y[k]);
    wsum += w;
  }
  return wsum != 0 ? cfloat(acc / wsum) : cfloat(0);
}

// The angle between two lines (directions mod pi), in [0, pi/2].
double line_angle(double a, double b) {
  double d = std::fmod(std::abs(a - b), M_PI);
  return d > M_PI / 2 ? M_PI - d : d;
}

}  // namespace

std::string GradientDelays::str() const {
  return fmt::format("{:.6f}:{:.6f}:{:.6f}", x, y, xy);
}

GradientDelays parse_gradient_delays(const std::string& text, const std::string& what) {
  GradientDelays d;
  std::istringstream in(text);
  char c1 = 0, c2 = 0;
  if (!(in >> d.x >> c1 >> d.y >> c2 >> d.xy) || c1 != ':' || c2 != ':' || !in.eof() || !std::isfinite(d.x) ||
      !std::isfinite(d.y) || !std::isfinite(d.xy))
    throw ConfigError(
        fmt::format("{} '{}' is not three numbers A:B:C (BART's traj -q x:y:xy, in samples), auto "
                    "or off",
                    what, text));
  return d;
}

double delay_along(const GradientDelays& d, double t) {
  const double c = std::cos(t), s = std::sin(t);
  return d.y * c * c + d.x * s * s + 2 * d.xy * s * c;
}

GradientDelays estimate_delays_ring(std::span<const float> traj, std::span<const cfloat> data, int samples,
                                    int spokes, int coils, const RingParams& prm) {
  if (samples < 4 || spokes < 2 || coils < 1)
    throw InputError(
        fmt::format("RING needs at least 2 spokes of 4 samples ({} x {} given)", spokes, samples));
  if (traj.size() != std::size_t(spokes) * samples * 2 ||
      data.size() != std::size_t(coils) * spokes * samples)
    throw InputError("RING: trajectory or data sizes disagree with the geometry");
  std::vector<Line> lines(static_cast<std::size_t>(spokes));
  for (int p = 0; p < spokes; ++p) lines[std::size_t(p)] = line_of(traj, samples, p);

  // Each spoke's data on a coarse grid of shifts t in [-region, region] around its k = 0 position.
  const double coarse = 0.05;
  const int G = int(std::lround(prm.region / coarse));
  const int NG = 2 * G + 1;
  std::vector<cfloat> table(std::size_t(spokes) * coils * NG);
  auto spoke_data = [&](int p, int c) { return data.data() + (std::size_t(c) * spokes + p) * samples; };
  for (int p = 0; p < spokes; ++p)
    for (int c = 0; c < coils; ++c)
      for (int g = 0; g < NG; ++g)
        table[(std::size_t(p) * coils + c) * NG + g] =
            interp(spoke_data(p, c), samples, lines[std::size_t(p)].s0 + (g - G) * coarse);

  // Rows of the least-squares fit: shift = x sin^2 + y cos^2 + 2 xy sin cos.
  double A[3][3] = {}, b[3] = {};
  auto add_row = [&](double theta, double shift) {
    const double s = std::sin(theta), c = std::cos(theta);
    const double r[3] = {s * s, c * c, 2 * s * c};
    for (int u = 0; u < 3; ++u) {
      for (int v = 0; v < 3; ++v) A[u][v] += r[u] * r[v];
      b[u] += r[u] * shift;
    }
  };
  int pairs = 0;
  for (int i = 0; i < spokes; ++i) {
    // The spoke nearest to orthogonal to spoke i.
    int j = -1;
    double best = 0;
    for (int k = 0; k < spokes; ++k) {
      const double a = line_angle(lines[std::size_t(i)].theta, lines[std::size_t(k)].theta);
      if (k != i && a > best) {
        best = a;
        j = k;
      }
    }
    if (j < 0 || best < 0.1) continue;  // (nearly) parallel lines cross nowhere useful
    // Coarse search, then a fine one around the best pair of shifts.
    auto cost_table = [&](int gi, int gj) {
      double e = 0;
      for (int c = 0; c < coils; ++c)
        e += std::norm(table[(std::size_t(i) * coils + c) * NG + gi] -
                       table[(std::size_t(j) * coils + c) * NG + gj]);
      return e;
    };
    int bi = G, bj = G;
    double be = cost_table(G, G);
    for (int gi = 0; gi < NG; ++gi)
      for (int gj = 0; gj < NG; ++gj) {
        const double e = cost_table(gi, gj);
        if (e < be) {
          be = e;
          bi = gi;
          bj = gj;
        }
      }
    const Line& li = lines[std::size_t(i)];
    const Line& lj = lines[std::size_t(j)];
    double ti = (bi - G) * coarse, tj = (bj - G) * coarse;
    const int F = int(std::lround(coarse / prm.step));
    double fi = ti, fj = tj;
    double fe = std::numeric_limits<double>::infinity();
    std::vector<cfloat> vi(std::size_t(coils) * (2 * F + 1)), vj(vi.size());
    for (int u = -F; u <= F; ++u)
      for (int c = 0; c < coils; ++c) {
        vi[std::size_t(c) * (2 * F + 1) + (u + F)] =
            interp(spoke_data(i, c), samples, li.s0 + ti + u * prm.step);
        vj[std::size_t(c) * (2 * F + 1) + (u + F)] =
            interp(spoke_data(j, c), samples, lj.s0 + tj + u * prm.step);
      }
    for (int u = -F; u <= F; ++u)
      for (int v = -F; v <= F; ++v) {
        double e = 0;
        for (int c = 0; c < coils; ++c)
          e += std::norm(vi[std::size_t(c) * (2 * F + 1) + (u + F)] -
                         vj[std::size_t(c) * (2 * F + 1) + (v + F)]);
        if (e < fe) {
          fe = e;
          fi = ti + u * prm.step;
          fj = tj + v * prm.step;
        }
      }
    // k = 0 lies at s0 + t on each spoke: its samples were moved by -t.
    add_row(li.theta, -fi);
    add_row(lj.theta, -fj);
    ++pairs;
  }
  // Solve the 3 x 3 normal equations (Cramer's rule, in double).
  auto det3 = [](const double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double D = det3(A);
  if (pairs < 2 || !(std::abs(D) > 1e-9 * (A[0][0] + A[1][1] + A[2][2] + 1e-30)))
    throw InputError(
        fmt::format("RING: the spokes' angles ({} usable pairs) do not determine three delays", pairs));
  double q[3];
  for (int u = 0; u < 3; ++u) {
    double M[3][3];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) M[r][c] = c == u ? b[r] : A[r][c];
    q[u] = det3(M) / D;
  }
  return {q[0], q[1], q[2]};
}

void apply_gradient_delays(std::span<float> traj, int samples, int spokes, const GradientDelays& d) {
  for (int p = 0; p < spokes; ++p) {
    const Line l = line_of(traj, samples, p);
    const double shift = delay_along(d, l.theta) * l.dk;
    float* t = traj.data() + std::size_t(p) * samples * 2;
    for (int s = 0; s < samples; ++s) {
      t[2 * s] = float(t[2 * s] + shift * l.nx);
      t[2 * s + 1] = float(t[2 * s + 1] + shift * l.ny);
    }
  }
}

}  // namespace radstream
