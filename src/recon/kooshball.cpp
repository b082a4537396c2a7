#include "recon/kooshball.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "recon/bart_nufft.hpp"
#include "recon/offline_volume.hpp"
#include "recon/rotated_stack.hpp"

namespace radstream {

bool is_kooshball(const CflArray& traj) {
  if (traj.dim(0) != 3) return false;
  const long S = traj.dim(1), spokes = long(traj.data.size()) / std::max(1L, 3 * S);
  for (long j = 0; j < spokes; ++j) {
    const float k0 = traj.data[std::size_t(3 * S * j + 2)].real();
    for (long s = 1; s < S; ++s)
      if (std::abs(traj.data[std::size_t(3 * (S * j + s) + 2)].real() - k0) > 1e-3f) return true;
  }
  return false;
}

std::vector<cfloat> kooshball_gridding(const CflArray& traj, const CflArray& kspace, int matrix,
                                       const ReconParams& p, const std::string& what) {
  if (p.method != ReconMethod::Gridding)
    throw ConfigError(
        fmt::format("{}: a 3D radial (kooshball) trajectory is reconstructed by --method gridding, or "
                    "cg-sense with --sens (not {})",
                    what, to_string(p.method)));
  const DcfMethod dcf = p.density.method;
  if (dcf == DcfMethod::Voronoi)
    throw ConfigError(
        fmt::format("{}: --dcf voronoi is not defined for a 3D radial trajectory (none, ramp or "
                    "ramp-dc: |k|^2)",
                    what));
  const long S = traj.dim(1), points = long(traj.data.size()) / 3;
  const long C = long(kspace.data.size()) / std::max(1L, points);
  if (kspace.dim(0) != 1 || kspace.dim(1) != S || C * points != long(kspace.data.size()) || C < 1)
    throw IoError(
        fmt::format("{}: k-space dimensions [{}] do not match the trajectory's {} samples x {} spokes", what,
                    fmt::join(kspace.dims, " "), S, points / std::max(1L, S)));
  // The 3D radial density falls as 1/|k|^2: weights |k|^2 (BART units over N/2, so 1 at the edge of k-space).
  const double half = 0.5 * matrix;
  std::vector<cfloat> weighted(kspace.data.size());
  for (long i = 0; i < points; ++i) {
    double w = 1.0;
    if (dcf != DcfMethod::None) {
      const double kx = traj.data[std::size_t(3 * i)].real(), ky = traj.data[std::size_t(3 * i + 1)].real(),
                   kz = traj.data[std::size_t(3 * i + 2)].real();
      w = (kx * kx + ky * ky + kz * kz) / (half * half);
    }
    for (long c = 0; c < C; ++c) {
      const cfloat v = kspace.data[std::size_t(c * points + i)];
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
        throw IoError(fmt::format("{}: k-space value {} is NaN or Inf", what, c * points + i));
      weighted[std::size_t(c * points + i)] = v * float(w);
    }
  }
  return adjoint_rss(traj.data, weighted, int(C), {matrix, matrix, matrix}, p, what);
}

std::vector<cfloat> kooshball_cg_sense(const CflArray& traj, const CflArray& kspace, int matrix,
                                       const ReconParams& p, const std::string& what) {
  if (p.cg.sens.empty())
    throw ConfigError(what +
                      ": cg-sense of a 3D radial (kooshball) trajectory takes its coil maps from --sens "
                      "(BART [N N N coils]); none are estimated for it");
  // The 3D SENSE route of a rotated stack, with N partitions of one spoke set: kz in cycles per pixel too.
  StackLayout l;
  l.partitions = matrix;
  l.samples = int(traj.dim(1));
  const long points = long(traj.data.size()) / 3;
  const int C = int(long(kspace.data.size()) / std::max(1L, points));
  return rotated_stack_cg_sense(l, traj, kspace, matrix, read_volume_maps(p.cg.sens, matrix, matrix, C), p,
                                what);
}

}  // namespace radstream
