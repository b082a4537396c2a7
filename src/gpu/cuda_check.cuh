// Checking of every CUDA runtime and cuFFT call and of every kernel launch: failures throw CudaError with the
// call, file and line. Included only by .cu files.
#pragma once
#include <cuda_runtime.h>
#include <cufft.h>

#include <string>

#include "core/error.hpp"

namespace radstream::gpu {

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) throw CudaError(call, cudaGetErrorString(e), file, line);
}

inline const char* cufft_error_name(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS:
      return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN:
      return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED:
      return "CUFFT_ALLOC_FAILED (out of GPU memory)";
    case CUFFT_INVALID_VALUE:
      return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR:
      return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED:
      return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED:
      return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE:
      return "CUFFT_INVALID_SIZE";
    default:
      return "cuFFT error";
  }
}

inline void check_cufft(cufftResult r, const char* call, const char* file, int line) {
  if (r != CUFFT_SUCCESS) throw CudaError(call, cufft_error_name(r), file, line);
}

}  // namespace radstream::gpu

#define CUDA_CHECK(call) ::radstream::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define CUFFT_CHECK(call) ::radstream::gpu::check_cufft((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: catches bad configurations without synchronizing.
#define CUDA_CHECK_LAUNCH(name) ::radstream::gpu::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__)
