// One offline reconstruction by the seeds' exact path (recon --method fhd | cg-exact): its inputs (an
// IMPATIENT folder or BART .cfl files with an optional field model), its settings, the image written and an
// optional JSON report. The recon command checks which options were given and calls run_exact_job.
#pragma once
#include <string>
#include <vector>

#include "recon/recon_params.hpp"

namespace radstream {

struct ExactJob {
  std::string traj, kspace, out;  // recon's own --traj/--kspace/--out
  int matrix = 0;
  std::string impatient, fieldmap, gradients, times, report, regions;
  int dims = 2;
  std::string gpus;
  bool fast_math = false, ignore_gradients = false;
  long long matrix_limit_mb = -1;  // -1: not given (ExactReconOptions' default)
  // The method (fhd or cg-exact), backend, iterations and lambda are the recon keys of those names;
  // iterations_given: --iterations was given (else the exact path's own default of 8).
  bool iterations_given = false;

  template <class V>
  void visit(V& v) {
    v.field("impatient", impatient,
            "--method fhd|cg-exact: an IMPATIENT data folder (seed 001's format) instead of --traj/--kspace");
    v.field("dims", dims, 2, 3, "--method fhd|cg-exact with --traj: 2 or 3");
    v.field("fieldmap", fieldmap, "--method fhd|cg-exact: off-resonance map [N N (N)] in Hz (.cfl)");
    v.field("gradients", gradients,
            "--method fhd|cg-exact: susceptibility gradients [N N (N) 3] in Hz across a voxel (.cfl)");
    v.field("times", times, "--method fhd|cg-exact: time of every sample in s (.cfl), with a field");
    v.field("fast_math", fast_math,
            "--method fhd|cg-exact on cuda: hardware sin/cos (faster, ~1e-6 less exact)");
    v.field("report", report, "--method fhd|cg-exact: write timings and settings as JSON");
    v.field("gpus", gpus,
            "--method fhd|cg-exact on cuda, k-space with slices: GPUs to spread them over, e.g. 0,1 (empty: "
            "all)");
    v.field(
        "matrix_limit_mb", matrix_limit_mb, -(1LL << 40), 1LL << 40,
        "--method cg-exact with a field: keep F as a stored matrix (computed once, then each CG iteration is "
        "one pass over it) when it takes at most this many MiB (-1: 1024; 0: every term recomputed)");
    v.field("regions", regions,
            "--method cg-exact: an anatomical prior, one region label per voxel (.cfl, whole numbers, the "
            "image's "
            "layout): C leaves out the differences between voxels of different regions (seed 000)");
    v.field("ignore_gradients", ignore_gradients,
            "--method fhd|cg-exact with --impatient: leave the susceptibility gradients out of the model");
  }

  // The exact-path options that were given, by their command-line names (for a method that takes none).
  std::vector<std::string> given_flags() const;
};

// Loads, reconstructs (slices spread over the GPUs), writes `out` and the report. Throws ConfigError naming
// the option for a bad combination, InputError/IoError for bad files.
void run_exact_job(const ExactJob& job, const ReconParams& params);

}  // namespace radstream
