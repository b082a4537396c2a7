// The custom FFT engine's twiddle table (custom_fft.cuh's passes read it), host side: no CUDA header needed.
#pragma once
#include <complex>
#include <vector>

namespace radstream::customfft {

// The custom engine's twiddle table for n points (custom_fft_tables.cu), computed in double: the factors of
// each pass in the order the pass reads them, so that the lanes of a warp, consecutive k, read consecutive
// entries. Pass (Ns, R) (Ns = 1, 8, 64, ..., then the last radix-2 or radix-4 pass) keeps
// exp(-2 pi i r k / (Ns R)) for r = 1..R-1, k < Ns at Ns - 1 + (r - 1) Ns + k: the passes before it hold
// Ns - 1 entries in all, the table n - 1 (n entries allocated). The plain table exp(-2 pi i m / n) read at
// m = r k n / (Ns R) had a warp of the 512-point last pass touch up to 14 cache lines a load (r = 7): the
// fused tail's rows kernel was bound by L1 wavefronts.
std::vector<std::complex<float>> twiddle_table(int n);

}  // namespace radstream::customfft
