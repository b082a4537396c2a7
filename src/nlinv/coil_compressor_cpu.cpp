#include "nlinv/coil_compressor.hpp"

#include "core/error.hpp"

namespace radstream {

namespace {

class CoilCompressorCpu final : public CoilCompressor {
 public:
  Location location() const override { return Location::Host; }
  std::vector<std::complex<double>> covariance(const cfloat* in, int coils, std::size_t points) override {
    return coil_covariance(in, coils, points);
  }
  void set(const CoilCompression& cc) override { cc_ = cc; }
  // out[v][p] = sum_a in[a][p] w[a][v]
  void compress(const cfloat* in, cfloat* out, std::size_t points) override {
    const int in_coils = cc_.coils, coils = cc_.virtual_coils;
    const cfloat* w = cc_.matrix.data();
#pragma omp parallel for
    for (std::ptrdiff_t pi = 0; pi < std::ptrdiff_t(points); ++pi) {
      const std::size_t p = std::size_t(pi);
      for (int v = 0; v < coils; ++v) {
        cfloat acc{};
        for (int a = 0; a < in_coils; ++a)
          acc += in[std::size_t(a) * points + p] * w[std::size_t(a) * coils + v];
        out[std::size_t(v) * points + p] = acc;
      }
    }
  }

 private:
  CoilCompression cc_;
};

}  // namespace

std::unique_ptr<CoilCompressor> make_coil_compressor_cpu() {
  return std::make_unique<CoilCompressorCpu>();
}

#ifndef RADSTREAM_HAVE_CUDA
std::unique_ptr<CoilCompressor> make_coil_compressor_cuda(gpu::StreamRef) {
  throw CudaError("make_coil_compressor_cuda", "this build has no CUDA backend", __FILE__, __LINE__);
}
#endif

}  // namespace radstream
