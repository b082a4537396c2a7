#include "display/tip_finder.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "display/window_presets.hpp"

namespace radstream::display {

Tip find_tip(std::span<const float> px, int n) {
  Tip t;
  const std::size_t N = std::size_t(std::max(0, n)) * std::size_t(std::max(0, n));
  if (n < 16 || px.size() < N) return t;
  const auto img = px.first(N);
  const auto inside = object_interior(img, n);
  // Integral image (double) for box sums; (n+1)^2 with a zero first row and column.
  const int m = n + 1;
  std::vector<double> S(std::size_t(m) * m, 0.0);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const float v = img[std::size_t(y) * n + x];
      S[std::size_t(y + 1) * m + x + 1] = (std::isfinite(v) ? v : 0.0) + S[std::size_t(y) * m + x + 1] +
                                          S[std::size_t(y + 1) * m + x] - S[std::size_t(y) * m + x];
    }
  const auto box = [&](int x, int y, int h, double& area) {
    const int x0 = std::max(0, x - h), y0 = std::max(0, y - h), x1 = std::min(n, x + h + 1),
              y1 = std::min(n, y + h + 1);
    area = double(x1 - x0) * double(y1 - y0);
    return S[std::size_t(y1) * m + x1] - S[std::size_t(y0) * m + x1] - S[std::size_t(y1) * m + x0] +
           S[std::size_t(y0) * m + x0];
  };
  const int hs = std::max(1, n / 100), hl = std::max(3, n / 20);
  float best = -1e30f;
  int bx = -1, by = -1;
  float surround_at_best = 0.f;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      if (!inside[std::size_t(y) * n + x]) continue;
      double as = 0, al = 0;
      const double ss = box(x, y, hs, as), sl = box(x, y, hl, al);
      const double surround = (sl - ss) / std::max(1.0, al - as);
      const float r = float(ss / as - surround);
      if (r > best) best = r, bx = x, by = y, surround_at_best = float(surround);
    }
  if (bx < 0) return t;
  const WindowLevel w = object_window(img, inside);  // the interior above, not computed again
  t.contrast = best;
  t.threshold = 0.85f * (w.high - w.low);
  // The centroid of the excess over the surround, in a box a little larger than the blob.
  double sw = 0, sx = 0, sy = 0;
  const int h = hs + 2;
  for (int y = std::max(0, by - h); y <= std::min(n - 1, by + h); ++y)
    for (int x = std::max(0, bx - h); x <= std::min(n - 1, bx + h); ++x) {
      const double e = double(img[std::size_t(y) * n + x]) - surround_at_best;
      if (e > 0) sw += e, sx += e * x, sy += e * y;
    }
  t.x = sw > 0 ? float(sx / sw) : float(bx);
  t.y = sw > 0 ? float(sy / sw) : float(by);
  t.found = best > t.threshold && best > 0.f;
  return t;
}

Tip3 find_tip_3d(std::span<const float> vol, int n, int depth) {
  Tip3 t;
  const std::size_t plane = std::size_t(std::max(0, n)) * std::size_t(std::max(0, n));
  if (depth < 1 || vol.size() < plane * std::size_t(depth)) return t;
  // Each z position as a plane; the tip is the blob standing out most over its own surround. (A projection
  // along z first would lift the skull's rim, bright over many positions, above a tip bright over few.)
  std::vector<Tip> at(static_cast<std::size_t>(depth));
  int best = 0;
  for (int z = 0; z < depth; ++z) {
    at[std::size_t(z)] = find_tip(vol.subspan(std::size_t(z) * plane, plane), n);
    const Tip& b = at[std::size_t(best)];
    const Tip& c = at[std::size_t(z)];
    if ((c.found && !b.found) || (c.found == b.found && c.contrast > b.contrast)) best = z;
  }
  const Tip& b = at[std::size_t(best)];
  t.found = b.found;
  t.x = b.x;
  t.y = b.y;
  t.contrast = b.contrast;
  t.threshold = b.threshold;
  // The depth: the centroid of the positive contrasts of the neighbouring positions whose blob lies where
  // this one does (within 2 pixels).
  double sw = 0, sz = 0;
  for (int z = std::max(0, best - 2); z <= std::min(depth - 1, best + 2); ++z) {
    const Tip& c = at[std::size_t(z)];
    if (c.contrast > 0 && std::hypot(c.x - b.x, c.y - b.y) <= 2.f) sw += c.contrast, sz += c.contrast * z;
  }
  t.z = sw > 0 ? float(sz / sw) : float(best);
  return t;
}

}  // namespace radstream::display
