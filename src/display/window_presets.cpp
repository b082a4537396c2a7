#include "display/window_presets.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "io/image_stats.hpp"

namespace radstream::display {
namespace {

WindowLevel span_of(std::span<const float> v, double lo_q, double hi_q) {
  WindowLevel w{std::max(0.f, percentile(v, lo_q)), percentile(v, hi_q)};
  if (!(w.high > w.low)) w.high = w.low + std::max(1e-6f, std::abs(w.low) * 1e-3f);
  return w;
}

}  // namespace

std::vector<std::uint8_t> object_interior(std::span<const float> px, int n, int rim) {
  const std::size_t N = std::size_t(n) * std::size_t(n);
  std::vector<std::uint8_t> inside(N, 0);
  if (n < 3 || px.size() < N) return inside;
  // Smoothed (3 x 3 box) so that streaks and noise outside the object do not reach the threshold.
  std::vector<float> sm(N, 0.f);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      float sum = 0.f;
      int cnt = 0;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int xx = x + dx, yy = y + dy;
          if (xx < 0 || yy < 0 || xx >= n || yy >= n) continue;
          const float v = px[std::size_t(yy) * n + xx];
          if (std::isfinite(v)) sum += v, ++cnt;
        }
      sm[std::size_t(y) * n + x] = cnt ? sum / float(cnt) : 0.f;
    }
  const float thr = 0.25f * percentile(sm, 99.0);
  if (!(thr > 0.f)) return inside;
  // The background: below the threshold and connected to the border. Everything else is the object.
  std::vector<std::uint8_t> outside(N, 0);
  std::deque<std::size_t> queue;
  const auto seed = [&](std::size_t i) {
    if (!outside[i] && !(sm[i] > thr)) outside[i] = 1, queue.push_back(i);
  };
  for (int k = 0; k < n; ++k) {
    seed(std::size_t(k));
    seed(std::size_t(n - 1) * n + k);
    seed(std::size_t(k) * n);
    seed(std::size_t(k) * n + n - 1);
  }
  while (!queue.empty()) {
    const std::size_t i = queue.front();
    queue.pop_front();
    const int x = int(i % n), y = int(i / n);
    if (x > 0) seed(i - 1);
    if (x < n - 1) seed(i + 1);
    if (y > 0) seed(i - n);
    if (y < n - 1) seed(i + n);
  }
  // Distance to the outside by the 3-4 chamfer (3 per axial step, 4 per diagonal one: within 8 % of the
  // Euclidean distance, where city-block would leave the rim on the diagonals), the frame edge outside too.
  const int r = rim > 0 ? rim : std::max(2, n / 24);
  const int far = 16 * n;
  std::vector<int> d(N);
  for (std::size_t i = 0; i < N; ++i) d[i] = outside[i] ? 0 : far;
  const auto at = [&](int x, int y) {
    return (x < 0 || y < 0 || x >= n || y >= n) ? 0 : d[std::size_t(y) * n + x];
  };
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      int& v = d[std::size_t(y) * n + x];
      v = std::min({v, at(x - 1, y) + 3, at(x, y - 1) + 3, at(x - 1, y - 1) + 4, at(x + 1, y - 1) + 4});
    }
  for (int y = n - 1; y >= 0; --y)
    for (int x = n - 1; x >= 0; --x) {
      int& v = d[std::size_t(y) * n + x];
      v = std::min({v, at(x + 1, y) + 3, at(x, y + 1) + 3, at(x + 1, y + 1) + 4, at(x - 1, y + 1) + 4});
    }
  for (std::size_t i = 0; i < N; ++i) inside[i] = d[i] > 3 * r ? 1 : 0;
  return inside;
}

WindowLevel object_window(std::span<const float> px, const std::vector<std::uint8_t>& inside) {
  std::vector<float> v;
  for (std::size_t i = 0; i < px.size() && i < inside.size(); ++i)
    if (inside[i]) v.push_back(px[i]);
  if (v.size() >= std::max<std::size_t>(16, px.size() / 100)) return span_of(v, 1.0, 99.5);
  return span_of(px, 1.0, 99.5);
}

WindowLevel preset_window(std::span<const float> px, int n, WindowPreset p) {
  const std::size_t N = std::min(px.size(), std::size_t(std::max(0, n)) * std::size_t(std::max(0, n)));
  const auto all = px.first(N);
  if (N == 0) return {};
  switch (p) {
    case WindowPreset::Full: {
      WindowLevel w{std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()};
      for (float v : all)
        if (std::isfinite(v)) w.low = std::min(w.low, v), w.high = std::max(w.high, v);
      if (w.low > w.high) return {};
      w.low = std::max(0.f, w.low);
      if (!(w.high > w.low)) w.high = w.low + 1e-6f;
      return w;
    }
    case WindowPreset::Object:
      return object_window(all, object_interior(all, n));
    case WindowPreset::Auto:
      break;
  }
  return span_of(all, 1.0, 99.5);
}

}  // namespace radstream::display
