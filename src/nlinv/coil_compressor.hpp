// Coil compression where the samples are: the coil covariance summed on the samples' side (a kernel on the
// GPU, in double as on the host) and the projection of each frame's samples on the virtual coils, the
// principal components that nlinv/coil_compression.hpp computes on the host from that covariance. NLINV's
// stream compresses with it (its first frame's covariance, inside that frame's deadline).
#pragma once
#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"
#include "nlinv/coil_compression.hpp"

namespace radstream {

class CoilCompressor {
 public:
  virtual ~CoilCompressor() = default;
  virtual Location location() const = 0;
  // C [coils][coils] row-major, C_ab = sum_p conj(x_a(p)) x_b(p) of in [coils][points] (at location()), in
  // double on the host (waits for it).
  virtual std::vector<std::complex<double>> covariance(const cfloat* in, int coils, std::size_t points) = 0;
  // Keeps cc's matrix for compress() (copied: cc may go).
  virtual void set(const CoilCompression& cc) = 0;
  // out [virtual coils][points] = the projection of in [coils][points] (both at location()).
  virtual void compress(const cfloat* in, cfloat* out, std::size_t points) = 0;
};

std::unique_ptr<CoilCompressor> make_coil_compressor_cpu();
// On the stream (cudaStream_t) given. CUDA builds only (else throws CudaError).
std::unique_ptr<CoilCompressor> make_coil_compressor_cuda(gpu::StreamRef stream);

}  // namespace radstream
