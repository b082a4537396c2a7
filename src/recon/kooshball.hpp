// A 3D radial ("kooshball") trajectory: spokes through k = 0 in every direction, so kz varies along them and
// there is no partition grid to transform along. `radstream recon` grids it through the 3D NUFFT
// (recon/bart_nufft.hpp): each sample weighted for the 3D radial density (it falls as 1/|k|^2, so --dcf ramp
// and ramp-dc weigh by |k|^2; none by 1), every coil's adjoint onto N x N x N, the coils by
// root-sum-of-squares. Its CG-SENSE, with coil maps given (--sens, BART [N N N C]), runs on the 3D SENSE
// operator over N^3 (as a stack of stars with rotated partitions does: recon/rotated_stack.hpp), on the CPU.
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

// The CG-SENSE volume [N][N][N] (magnitude in the real part) with the maps of p.cg.sens (BART [N N N C]):
// p.cg's iterations and relative lambda. Throws ConfigError without maps or for settings the 3D route does
// not take, IoError for a maps file that does not fit.
std::vector<cfloat> kooshball_cg_sense(const CflArray& traj, const CflArray& kspace, int matrix,
                                       const ReconParams& p, const std::string& what);

}  // namespace radstream
