// CPU twins of the FBP stages: FFTW (planned once, batched over spokes and coils) and an OpenMP
// backprojection over image rows.
#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/math.hpp"
#include "stages/fbp/fbp.hpp"

namespace radstream {
namespace {

// The frame's spoke lines, fitted once per frame by the chain.
const std::vector<SpokeLine>& spoke_lines(const FrameContext& frame, const char* stage, int spokes) {
  if (!frame.lines || int(frame.lines->lines().size()) != spokes)
    throw InputError(
        fmt::format("{}: the frame context carries no spoke lines for {} spokes", stage, spokes));
  return frame.lines->lines();
}

class FbpProjectCpu final : public Stage {
 public:
  FbpProjectCpu(const FbpParams& p, const FftParams& fft) : p_(p), fft_(fft) {
    if (fft.engine != FftEngine::Auto && fft.engine != FftEngine::Fftw)
      throw ConfigError("fbp: FFT engine '" + to_string(fft.engine) +
                        "' needs the CUDA backend; the CPU uses fftw");
  }
  std::string name() const override { return "fbp_project"; }
  StageSpec spec() const override {
    StageSpec s;
    s.spoke_lines = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    const Extents expect{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(g.samples)};
    if (!(input == expect))
      throw ConfigError(
          fmt::format("fbp_project: input {} is not the frame's {}", input.str(), expect.str()));
    in_ext_ = input;
    S_ = g.samples;
    P_ = fbp_fft_size(S_);
    out_ext_ = Extents{input[0], input[1], std::size_t(P_)};
    plan_ = FftwPlan({P_}, int(input[0] * input[1]), FftDirection::Inverse,
                     fft_.planner == FftPlanner::Estimate ? FftPlanner::Estimate : FftPlanner::Measure,
                     ctx.threads);
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("fbp_project", "input", in, in_ext_, Location::Host);
    expect_view("fbp_project", "output", out, out_ext_, Location::Host);
    const int spokes = int(in_ext_[1]), S = S_, P = P_;
    const std::vector<SpokeLine>& lines = spoke_lines(frame, "fbp_project", spokes);
    const long rows = long(in_ext_[0]) * spokes;
    const int filter = int(p_.filter);
    const float cutoff = float(p_.cutoff);
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
      const SpokeLine& l = lines[r % spokes];
      const cfloat* src = in.data + std::size_t(r) * S;
      cfloat* dst = out.data + std::size_t(r) * P;
      std::fill(dst, dst + P, cfloat(0, 0));
      for (int n = 0; n < S; ++n) {
        const int j = ((n - S / 2) % P + P) % P;
        const float sign = (j % 2) ? -1.f : 1.f;  // (-1)^j: the projection comes out centred at P/2
        const float h = fbp_filter_value(filter, cutoff, float(n - S / 2) * l.dk + l.kc, l.dk);
        dst[j] = src[n] * (h * sign);
      }
    }
    plan_.execute(out.data);
  }

 private:
  FbpParams p_;
  FftParams fft_;
  Extents in_ext_, out_ext_;
  int S_ = 0, P_ = 0;
  FftwPlan plan_;
};

class BackprojectCpu final : public Stage {
 public:
  explicit BackprojectCpu(const FbpParams& p) : p_(p) {}
  std::string name() const override { return "backproject"; }
  StageSpec spec() const override {
    StageSpec s;
    s.spoke_lines = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    const int P = fbp_fft_size(g.samples);
    const Extents expect{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(P)};
    if (!(input == expect))
      throw ConfigError(
          fmt::format("backproject: input {} is not the projections {}", input.str(), expect.str()));
    g_ = g;
    in_ext_ = input;
    P_ = P;
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(g.matrix), std::size_t(g.matrix)};
    c_.resize(g.spokes);
    s_.resize(g.spokes);
    ph_.resize(g.spokes);
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("backproject", "input", in, in_ext_, Location::Host);
    expect_view("backproject", "output", out, out_ext_, Location::Host);
    const std::vector<SpokeLine>& lines = spoke_lines(frame, "backproject", g_.spokes);
    const int N = g_.matrix, Ps = g_.spokes, P = P_;
    const float half = 0.5f * float(P);
    // u = t P dk + P/2 indexes the projection; the phase exp(2 pi i kc t) = exp(i (u - P/2) ph) with
    // ph = 2 pi kc / (P dk).
    std::vector<float>&c = c_, &s = s_, &ph = ph_;
    bool shifted = false;
    for (int p = 0; p < Ps; ++p) {
      const SpokeLine& l = lines[p];
      c[p] = std::cos(l.theta) * float(P) * l.dk;
      s[p] = std::sin(l.theta) * float(P) * l.dk;
      ph[p] = l.dk > 0 ? (2.f * kPiF) * l.kc / (float(P) * l.dk) : 0.f;
      shifted |= ph[p] != 0.f;
    }
    const long rows = long(g_.coils) * N;
#pragma omp parallel for schedule(static)
    for (long r = 0; r < rows; ++r) {
      const int coil = int(r / N), iy = int(r % N);
      const float y = float(iy - N / 2);
      const cfloat* q = in.data + std::size_t(coil) * Ps * P;
      cfloat* dst = out.data + (std::size_t(coil) * N + iy) * N;
      for (int ix = 0; ix < N; ++ix) {
        const float x = float(ix - N / 2);
        std::complex<float> acc(0, 0);
        for (int p = 0; p < Ps; ++p) {
          const float u = x * c[p] + y * s[p] + half;
          const float fl = std::floor(u);
          const int m = int(fl);
          if (m < 0 || m + 1 >= P) continue;
          const float f = u - fl;
          const cfloat* qp = q + std::size_t(p) * P;
          cfloat v = lines[p].weight * (qp[m] * (1.f - f) + qp[m + 1] * f);
          if (shifted) v *= std::polar(1.f, (u - half) * ph[p]);
          acc += v;
        }
        dst[ix] = acc;
      }
    }
  }

 private:
  FbpParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int P_ = 0;
  std::vector<float> c_, s_, ph_;  // per spoke: cos and sin x P dk, phase slope
};

}  // namespace

std::unique_ptr<Stage> make_fbp_project_cpu(const FbpParams& p, const FftParams& fft) {
  return std::make_unique<FbpProjectCpu>(p, fft);
}

std::unique_ptr<Stage> make_backproject_cpu(const FbpParams& p) {
  return std::make_unique<BackprojectCpu>(p);
}

}  // namespace radstream
