// One offline reconstruction through the stage chain (radstream recon with gridding, fbp, cg-sense, ...):
// a window of an MRD file or a BART trajectory/k-space pair in, the combined image out, timed over repeats.
#pragma once
#include <string>
#include <vector>

#include "core/frame.hpp"

#include "recon/recon_params.hpp"

namespace radstream {

// The data and the output of one reconstruction (the method's settings are ReconParams').
struct OfflineRecon {
  std::string traj, kspace, input, out, sens_out;
  int matrix = -1;  // -1: not given
  long start = 0, count = -1;
  int repeat = 1;
  int partitions = -1;    // a stack of stars' depth; -1: read from the trajectory's kz
  bool stack_3d = false;  // a stack of stars through the 3D NUFFT even when it splits into z positions
  std::string gradient_delay = "off";  // off | auto | A:B:C (noncart/gradient_delay.hpp)
  std::string memory_limit = "auto";   // what the frame and reconstruction of an MRD file may take

  template <class V>
  void visit(V& v) {
    v.field("traj", traj, "BART trajectory [3 samples spokes] in BART units (+-N/2)");
    v.field("kspace", kspace, "BART k-space [1 samples spokes coils]");
    v.field("input", input, "MRD .h5 file (instead of --traj/--kspace)");
    v.field("matrix", matrix, -1, 1 << 14,
            "image matrix N (required with --traj; overrides the MRD header; -1: not given)");
    v.field("start", start, 0L, 1L << 40, "first spoke of an MRD file");
    v.field("count", count, -1L, 1L << 40, "number of spokes of an MRD file (-1: all)");
    v.field("memory_limit", memory_limit,
            "memory the frame and reconstruction of an MRD file may take, checked before reading: auto (half "
            "the RAM; 90 % of the GPU's free memory) or a size (8G, 512M)");
    v.field("out", out, "output .cfl ([N N] complex, combined magnitude) or .png (8-bit grey)");
    v.field("partitions", partitions, -1, 1 << 12,
            "a stack of stars (--traj whose kz lie on whole numbers): the volume depth P, written as [N N P] "
            "(-1: read from the trajectory)");
    v.field("stack_3d", stack_3d,
            "a stack of stars by gridding (or cg-sense with --sens) through the 3D NUFFT, as a rotated stack "
            "goes, even when its partitions share their angles (the comparison with the z positions' route)");
    v.field("repeat", repeat, 1, 1 << 20, "reconstruct this many times and report the median time");
    v.field(
        "gradient_delay", gradient_delay,
        "correct the trajectory for gradient delays: off, auto (RING on the data) or A:B:C (BART's traj -q "
        "x:y:xy, in samples)");
    v.field("sens_out", sens_out,
            "write the coil maps here (BART [N N 1 coils], usable as --sens of cg-sense on the same coils): "
            "cg-sense's (estimated or read), or nlinv's of the last frame (virtual coils when compressed)");
  }
};

// One frame's reconstruction in memory (what run_offline_recon does once the data are read; the Python
// module's radstream.recon): gradient delays corrected ("off", "auto" or "A:B:C"), the chain configured, the
// coil maps fixed (the file's or estimated), `repeat` runs timed (the median logged). The image is the
// combined [N N] complex image; the coil maps [N N coils] come with want_maps when the method uses them
// (coils 0 otherwise). Throws ConfigError, InputError, NumericError.
struct OfflineImage {
  std::vector<cfloat> image;
  std::vector<cfloat> coil_maps;
  int coils = 0;
};
OfflineImage reconstruct_offline(Frame& frame, const ReconParams& params, const std::string& gradient_delay,
                                 int repeat = 1, bool want_maps = false);

// Reads the data, configures the chain, takes the coil maps (the file's or estimated), reconstructs `repeat`
// times (the median logged) and writes `out`. Throws ConfigError naming the option, InputError/IoError.
void run_offline_recon(const OfflineRecon& job, const ReconParams& params);

}  // namespace radstream
