// A 3D radial ("kooshball") trajectory: spokes through k = 0 in every direction, so kz varies along them and
// there is no partition grid to transform along. `radstream recon` grids it through the 3D NUFFT
// (recon/bart_nufft.hpp): each sample weighted for the 3D radial density (it falls as 1/|k|^2, so --dcf ramp
// and ramp-dc weigh by |k|^2; none by 1), every coil's adjoint onto N x N x N, the coils by
// root-sum-of-squares.
#pragma once
#include <string>
#include <vector>

#include "io/cfl.hpp"
#include "recon/recon_params.hpp"

namespace radstream {

// True when some spoke of traj (BART [3 samples spokes]) has kz varying along it.
bool is_kooshball(const CflArray& traj);

// The volume [N][N][N] (magnitude in the real part) of traj and kspace (BART [1 samples spokes coils]);
// p.gridding's kernel, p's backend. Throws ConfigError for a --dcf it does not apply (voronoi) or another
// method than gridding, IoError for mismatched or non-finite data.
std::vector<cfloat> kooshball_gridding(const CflArray& traj, const CflArray& kspace, int matrix,
                                       const ReconParams& p, const std::string& what);

}  // namespace radstream
