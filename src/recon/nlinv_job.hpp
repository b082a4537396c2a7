// radstream recon --method nlinv: a time series in BART rtnlinv's layouts reconstructed frame by frame by
// NLINV (nlinv/nlinv_cpu.hpp). k-space [1 samples spokes coils 1 ... frames] with the frames along dimension
// 10, the trajectory [3 samples spokes 1 ... turns] in BART units (+-N/2 for an N x N image; frame f uses
// turn f mod turns); the output [N N 1 ... frames] complex. One frame is plain nlinv.
#pragma once
#include <string>
#include <vector>

#include "core/buffer.hpp"

#include "recon/recon_params.hpp"

namespace radstream {

struct NlinvJob {
  std::string traj, kspace, out, sens_out;
  int matrix = -1;  // -1: from the trajectory (2 ceil(max |k|), as BART estimates it)
};

// Reads, reconstructs every frame (progress at info level), writes `out`. Throws ConfigError naming the
// option, InputError naming the file and the bad extent or value.
void run_nlinv_job(const NlinvJob& job, const ReconParams& params);

// The same on arrays in memory (the Python module's radstream.recon): `job` names them in errors (traj,
// kspace) and gives the matrix. images [N N 1 ... frames] (dims, 16 of them, BART's order); the last frame's
// coil maps [N N 1 coils] with want_maps.
struct NlinvImages {
  std::vector<long> dims;
  std::vector<cfloat> images;
  std::vector<cfloat> coil_maps;
  int coils = 0;
  double median_ms = 0;
};
struct CflArray;
NlinvImages reconstruct_nlinv(const NlinvJob& job, const CflArray& t, const CflArray& k,
                              const ReconParams& params, bool want_maps = false);

}  // namespace radstream
