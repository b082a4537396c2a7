// The NUFFT on BART's layouts and units, for `radstream nufft` and the Python module (radstream.nufft,
// radstream.NufftPlan): trajectory [3 samples spokes ...] in BART units (+-N/2 per axis), k-space
// [1 samples spokes extra...], image [X Y (Z) extra...]. Both directions are scaled by 1/sqrt(prod N) as
// `bart nufft` scales them, so the results equal BART's to the kernel's accuracy (W 6, sigma 2: ~1e-5).
// A plan is made once per trajectory and applied to any number of images or k-space sets.
#pragma once
#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"
#include "recon/backend.hpp"

namespace radstream {

struct BartNufftOptions {
  int width = 6;              // Kaiser-Bessel width in grid cells
  double oversampling = 2.0;  // grid oversampling sigma
  int lut_resolution = 4096;  // kernel table entries per grid cell
  int threads = 0;            // CPU threads (0: all)
  BackendChoice backend = BackendChoice::Auto;
};

// "N:N" or "N:N:N" (x:y[:z]); `option` names the setting in the ConfigError ("--dims", "dims").
std::vector<int> parse_nufft_dims(const std::string& s, const std::string& option);
// The image extents a trajectory reaches: 2 * ceil(max |k|) per axis (at least 2; a third axis only when
// the trajectory uses it).
std::vector<int> nufft_dims_of_reach(std::span<const cfloat> traj);

struct ReconParams;

// Every coil of `weighted` (BART [1 points... coils], the weights already applied) through the adjoint onto
// `dims`, with p's kernel, threads and backend, the coils combined by root-sum-of-squares (magnitude in the
// real part): the 3D gridding of a stack whose partitions are turned (recon/rotated_stack.hpp) and of a
// kooshball (recon/kooshball.hpp).
std::vector<cfloat> adjoint_rss(std::span<const cfloat> traj, const std::vector<cfloat>& weighted, int coils,
                                std::vector<int> dims, const ReconParams& p, const std::string& what);

class BartNufftPlan {
 public:
  // `traj`: BART's [3 points...] (complex, real parts used), `dims`: {X,Y} or {X,Y,Z}, each even in 2..4096.
  // `what` names the trajectory in errors. Throws ConfigError (bad dims, options, an unusable backend) and
  // InputError (a coordinate that is not finite or beyond 1e6) naming the value.
  BartNufftPlan(std::span<const cfloat> traj, std::vector<int> dims, const BartNufftOptions& o,
                const std::string& what);
  ~BartNufftPlan();
  BartNufftPlan(const BartNufftPlan&) = delete;
  BartNufftPlan& operator=(const BartNufftPlan&) = delete;

  const std::vector<int>& dims() const { return dims_; }
  std::size_t image_size() const { return std::size_t(matrix_[0]) * matrix_[1] * matrix_[2]; }
  std::size_t points() const { return points_; }
  Backend backend() const { return where_.backend; }
  const std::string& backend_reason() const { return where_.reason; }
  // `batch` images (image_size() each) -> `batch` k-space sets (points() each), and back; scaled as BART.
  void forward(const cfloat* image, cfloat* kspace, int batch);
  void adjoint(const cfloat* kspace, cfloat* image, int batch);
  // The same on device arrays (a DLPack caller's tensors) with no host copy: the work is ordered after what
  // `caller` had enqueued, and `caller` waits for it (the caller's stream is respected; the host waits for
  // nothing). The arrays must be on device(). Throws ConfigError on a plan that runs on the CPU.
  void forward_device(const cfloat* d_image, cfloat* d_kspace, int batch, gpu::StreamRef caller);
  void adjoint_device(const cfloat* d_kspace, cfloat* d_image, int batch, gpu::StreamRef caller);
  int device() const { return device_; }  // the GPU of the CUDA engine (-1 on the CPU)

 private:
  struct Engine;  // the CPU or CUDA operator for one batch size (made at the first use of that size)
  Engine& engine(int batch);
  // The operator on device arrays between the caller's stream and the engine's, then the output scaled.
  void on_device(bool forward, const cfloat* d_in, cfloat* d_out, int batch, gpu::StreamRef caller);
  std::vector<int> dims_;
  std::array<int, 3> matrix_{1, 1, 1};
  std::size_t points_ = 0;
  std::vector<float> k_;  // cycles per pixel, [points][dims]
  BartNufftOptions o_;
  BackendDecision where_;
  int device_ = -1;
  std::unique_ptr<Engine> engine_;
};

}  // namespace radstream
