// The GPU libraries' one-time start-up, done before a stream needs them: the first cuFFT plan of a process
// loads the library's kernels, which on an H200 host took a few hundred milliseconds inside the first
// stream's chain set-up (while its first frames came due). A server on the CUDA backend pays it at start.
#pragma once

namespace radstream {

// Makes and destroys one small cuFFT plan on the current GPU, and returns the milliseconds it took. Throws
// CudaError. A build without CUDA does nothing (0).
double warm_up_gpu_libraries();

}  // namespace radstream
