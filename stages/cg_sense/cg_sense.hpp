// CG-SENSE (seed 000; Pruessmann's iterative SENSE on the redesign's operators): the frame's image x solves
//   (E^H E + lambda_abs I + mu_abs D^H D) x = E^H y,   lambda_abs = lambda * sum_j w_j * max_p sum_c
//   |S_c(p)|^2
// (mu_abs = smoothness times the same scale; D: periodic finite differences, seed 001's C; off by default)
// by conjugate gradients, E the SENSE operator with the frame's coil maps (frame.coil_maps) and trajectory,
// the normal operator through the Toeplitz PSF kernel (made per frame from the trajectory) unless toeplitz is
// off. lambda is relative: sum_j w_j (the sample count when unweighted) times the maps' peak power is the
// largest diagonal entry of E^H E, so one value works across data scales, map scales (BART's phantom maps
// peak near 1.6e5, ESPIRiT's and radstream's own at 1), matrix sizes and spoke counts.
// Warm start: x0 is this stage's previous frame (zeros on the first). A fixed count runs without any host
// wait (a CUDA graph holds the whole solve); deadline mode (deadline_ms > 0) runs iterations while the next
// one fits the budget, at least one, at most `iterations`, and reports the count.
// Coil split: with split_parts > 1 the frame's coils are split over that many partitions (host
// threads on the cpu backend; GPUs on cuda: split_gpus, else GPUs 0..split_parts-1), one allreduce of the
// image per CG iteration (noncart/coil_split_sense.hpp), but only once the unsplit solve is slow: the first 5
// frames are solved on one device and timed, and the split starts when their median exceeds split_above_ms
// (0: from the first frame). Not with smoothness or a deadline; the split solve is not captured in the
// chain's CUDA graph. Input [coils][spokes][samples]; output the complex image [N][N] (a "magnitude" stage
// follows for display).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/enum_table.hpp"
#include "fft/fftw_plan.hpp"
#include "noncart/nufft_kernel.hpp"
#include "stage/stage.hpp"

namespace radstream {

// How coil maps are estimated from the data when no file is given (recon/coil_map_estimate.hpp): ESPIRiT
// (eigenvector maps of the calibration region, as BART's ecalib -m1), or Walsh's local method refined against
// the data (the stream's quick first estimate before the ESPIRiT one exists is not needed: ESPIRiT is quick).
enum class CoilMapMethod { Espirit, Walsh };
inline constexpr EnumTable<CoilMapMethod, 2> kCoilMapMethods{
    "coil map method", {{{CoilMapMethod::Espirit, "espirit"}, {CoilMapMethod::Walsh, "walsh"}}}};
// Whether estimated maps fade out where the coils see no signal (auto: ESPIRiT's eigenvalue through a smooth
// step; Walsh's energy threshold) or keep unit root-sum-of-squares over the whole field of view (off).
enum class SensMask { Auto, Off };
inline constexpr EnumTable<SensMask, 2> kSensMasks{"coil map mask",
                                                   {{{SensMask::Auto, "auto"}, {SensMask::Off, "off"}}}};

struct CgSenseParams {
  int iterations = 10;       // CG iterations per frame (the cap in deadline mode)
  double lambda = 1e-2;      // Tikhonov weight, relative (see above)
  double smoothness = 0.0;   // weight of ||D x||^2 (periodic finite differences), relative like lambda
  double deadline_ms = 0.0;  // 0: fixed count; > 0: the solver's time budget per frame
  bool warm_start = true;    // start from the previous frame's image
  bool toeplitz = true;      // normal operator through the PSF kernel (else gridding both ways)
  std::string sens;          // coil maps file (BART [N N 1 coils]); empty: estimated from the data
  int maps_matrix = 48;      // estimated maps: the low-resolution matrix they are computed on
  CoilMapMethod maps_method = CoilMapMethod::Espirit;  // estimated maps: how
  SensMask sens_mask = SensMask::Auto;                 // estimated maps: faded outside the signal, or not
  int maps_every = 64;          // estimated maps in a stream: refreshed every this many frames
  int split_parts = 0;          // coil split partitions (0 or 1: off)
  std::string split_gpus;       // cuda: the partitions' GPUs, "0,1" (empty: 0..split_parts-1)
  double split_above_ms = 2.0;  // split only when the unsplit solve's median exceeds this (0: always)
  bool joint_volume = true;     // a stack of stars: one CG over the volume (recon/volume_sense.hpp)

  template <class V>
  void visit(V& v) {
    v.field("iterations", iterations, 1, 1000,
            "cg-sense: CG iterations per frame (the most, with a deadline)");
    v.field("lambda", lambda, 0.0, 1e3,
            "cg-sense: Tikhonov weight relative to the largest diagonal entry of E^H E");
    v.field("smoothness", smoothness, 0.0, 1e3,
            "cg-sense: weight of the finite-difference smoothness penalty ||D x||^2, relative like lambda (0 "
            "= off)");
    v.field("deadline_ms", deadline_ms, 0.0, 1e4,
            "cg-sense: stop iterating when the next iteration would pass this many ms (0 = fixed count)");
    v.field("warm_start", warm_start, "cg-sense: start each frame from the previous frame's image");
    v.field("toeplitz", toeplitz, "cg-sense: apply E^H E through the Toeplitz PSF kernel (2x-padded FFTs)");
    v.field("sens", sens,
            "cg-sense / sense combination: coil maps file, BART [N N 1 coils] (empty = estimate)");
    v.field("maps_matrix", maps_matrix, 8, 512,
            "estimated coil maps: low-resolution matrix they are computed on");
    v.choice("maps_method", maps_method, kCoilMapMethods,
             "estimated coil maps: espirit (eigenvector maps of the calibration region, as BART's ecalib) or "
             "walsh (local eigenvectors refined against the data)");
    v.choice(
        "sens_mask", sens_mask, kSensMasks,
        "estimated coil maps: auto fades them out smoothly where the coils see no signal; off keeps them "
        "over the whole field of view");
    v.field("maps_every", maps_every, 1, 100000,
            "estimated coil maps: refresh every this many frames in a stream");
    v.field(
        "split_parts", split_parts, 0, 64,
        "cg-sense: split each frame's coils over this many partitions (cpu: threads; cuda: GPUs) (0 = off)");
    v.field("split_gpus", split_gpus,
            "cg-sense: the coil split's GPUs, e.g. \"0,1\" (empty = 0..split_parts-1)");
    v.field("split_above_ms", split_above_ms, 0.0, 1e4,
            "cg-sense: split only when the one-device solve's median (first 5 frames) is above this many ms "
            "(0 = always)");
    v.field("joint_volume", joint_volume,
            "cg-sense of a stack of stars: one CG over the whole volume, batched over partitions x coils "
            "(false: each partition its own CG, one after the other)");
  }
};

// The coil split's partitions on the cuda backend: split_gpus parsed, or 0..split_parts-1 (ConfigError naming
// a bad entry or a count that disagrees with split_parts).
std::vector<int> cg_sense_split_gpus(const CgSenseParams& p);
// The one line the stage logs when it decides (split: over `parts`; else why not), outside CUDA code.
void log_cg_sense_split(std::size_t coils, int parts, double median_ms, double above_ms, bool split);

// Memory (StageSizes), at the NUFFT's oversampling os: the gridding start (the coils' grids and its FFT
// work, the GPU forward NUFFT's row pass), the coil maps and their estimate, the padded per-coil work of the
// (2N)^2 Toeplitz normal operator and its kernel, the CG's vectors.
inline double cg_sense_bytes(const StageSizes& s, double os) {
  const double psf = 4 * s.image();
  const double head = s.matrix * s.side(os) * s.coils * StageSizes::kComplex;
  return 2 * s.grid(os) + head + 2 * s.image() * s.coils + 2 * psf * s.coils + psf + 8 * s.image();
}

std::unique_ptr<Stage> make_cg_sense_cpu(const CgSenseParams& p, const NufftKernel& kernel,
                                         FftPlanner planner);
std::unique_ptr<Stage> make_cg_sense_cuda(const CgSenseParams& p, const NufftKernel& kernel);  // CUDA builds

}  // namespace radstream
