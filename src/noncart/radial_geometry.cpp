#include "noncart/radial_geometry.hpp"

#include <algorithm>
#include <numeric>

#include "core/math.hpp"

namespace radstream {

void SpokeLineSet::resize(int spokes) {
  lines_.resize(spokes);
  folded_.resize(spokes);
  order_.resize(spokes);
}

void SpokeLineSet::fit(std::span<const float> traj, int samples) {
  const int spokes = int(lines_.size());
  for (int p = 0; p < spokes; ++p) {
    lines_[p] = fit_spoke_line(traj.data() + std::size_t(p) * samples * 2, samples);
    folded_[p] = float(std::fmod(double(lines_[p].theta) + 2 * kPi, kPi));  // mod pi (float, as on the GPU)
  }
  if (spokes == 1) {
    lines_[0].weight = float(kPi);
    return;
  }
  std::iota(order_.begin(), order_.end(), 0);
  // Ties (the two directions of one line in a 360-degree set) in index order, as the GPU twin breaks them.
  const auto& f = folded_;
  std::sort(order_.begin(), order_.end(),
            [&](int a, int b) { return f[a] < f[b] || (f[a] == f[b] && a < b); });
  for (int i = 0; i < spokes; ++i) {
    const double prev = double(f[order_[(i + spokes - 1) % spokes]]) - (i == 0 ? kPi : 0.0);
    const double next = double(f[order_[(i + 1) % spokes]]) + (i == spokes - 1 ? kPi : 0.0);
    lines_[order_[i]].weight = float(0.5 * (next - prev));
  }
}

}  // namespace radstream
