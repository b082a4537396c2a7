#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "fbp/fbp.hpp"

namespace radstream {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

FbpFilter parse_fbp_filter(const std::string& name) {
  if (name == "ram-lak") return FbpFilter::RamLak;
  if (name == "shepp-logan") return FbpFilter::SheppLogan;
  if (name == "hann") return FbpFilter::Hann;
  throw ConfigError("FBP filter '" + name + "' is not one of ram-lak, shepp-logan, hann");
}

std::string to_string(FbpFilter f) {
  switch (f) {
    case FbpFilter::RamLak:
      return "ram-lak";
    case FbpFilter::SheppLogan:
      return "shepp-logan";
    case FbpFilter::Hann:
      return "hann";
  }
  return "ram-lak";
}

int fbp_fft_size(int samples) {
  int p = 1;
  while (p < 2 * samples) p *= 2;
  return p;
}

void fbp_lines(std::span<const float> traj, int spokes, int samples, std::vector<SpokeLine>& lines) {
  lines.resize(spokes);
  std::vector<float> folded(spokes);
  for (int p = 0; p < spokes; ++p) {
    lines[p] = fit_spoke_line(traj.data() + std::size_t(p) * samples * 2, samples);
    folded[p] = float(
        std::fmod(double(lines[p].theta) + 2 * kPi, kPi));  // a line's angle mod pi (float, as on the GPU)
  }
  if (spokes == 1) {
    lines[0].weight = float(kPi);
    return;
  }
  std::vector<int> order(spokes);
  std::iota(order.begin(), order.end(), 0);
  // Ties (the two directions of one line in a 360-degree set) in index order, as the GPU twin breaks them.
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return folded[a] < folded[b] || (folded[a] == folded[b] && a < b); });
  for (int i = 0; i < spokes; ++i) {
    const double prev = double(folded[order[(i + spokes - 1) % spokes]]) - (i == 0 ? kPi : 0.0);
    const double next = double(folded[order[(i + 1) % spokes]]) + (i == spokes - 1 ? kPi : 0.0);
    lines[order[i]].weight = float(0.5 * (next - prev));
  }
}

}  // namespace radstream
