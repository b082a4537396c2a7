#include "recon/rotated_window.hpp"

#include "core/error.hpp"
#include "recon/rotated_stack.hpp"
#include "recon/stack_of_stars.hpp"

namespace radstream {

std::pair<CflArray, CflArray> window_as_bart(const Frame& raw, int N, int P) {
  const long R = raw.geometry.spokes, S = raw.geometry.samples, C = raw.geometry.coils;
  CflArray t{{3, S, R}, {}}, k{{1, S, R, C}, {}};
  t.data.resize(std::size_t(3 * S * R));
  k.data.resize(std::size_t(S * R * C));
  for (long r = 0; r < R; ++r) {
    const float kz = float(int(raw.partition[std::size_t(r)]) - P / 2);
    for (long n = 0; n < S; ++n) {
      const std::size_t at = std::size_t(r * S + n);
      t.data[3 * at] = cfloat(raw.traj[2 * at] * float(N), 0.f);
      t.data[3 * at + 1] = cfloat(raw.traj[2 * at + 1] * float(N), 0.f);
      t.data[3 * at + 2] = cfloat(kz, 0.f);
    }
  }
  // data [C][R][S] is BART's [1 S R C] already (S fastest, then R, then C).
  std::copy(raw.data.data(), raw.data.data() + k.data.size(), k.data.begin());
  return {std::move(t), std::move(k)};
}

std::vector<cfloat> reconstruct_rotated_window(const Frame& raw, int N, int P, const ReconParams& p,
                                               const std::vector<HostBuffer<cfloat>>& maps) {
  const bool sense = p.method == ReconMethod::CgSense && !maps.empty();
  if (p.method != ReconMethod::Gridding && !sense)
    throw ConfigError("partitions rotated against each other: --method " + to_string(p.method) +
                      " needs one 2D problem per z position; gridding, or cg-sense with coil maps "
                      "(recon.sens, BART [N N P C]), reconstructs them through the 3D NUFFT");
  const auto [t, k] = window_as_bart(raw, N, P);
  const std::string what = "a volume's window";
  const auto layout = stack_of_stars_layout(t, P, what);
  if (!layout) throw InputError(what + ": not a stack of stars");
  return sense ? rotated_stack_cg_sense(*layout, t, k, N, maps, p, what)
               : rotated_stack_gridding(*layout, t, k, N, p, what);
}

}  // namespace radstream
