// The custom FFT engine's host side (custom_fft.cuh) that every layer may use: the sizes it takes and the
// twiddle factors, in double before rounding.
#include <algorithm>
#include <cmath>

#include "core/math.hpp"
#include "fft/custom_fft.cuh"

namespace radstream::customfft {

// A size's kernel that does nothing: a struct, not a templated lambda, whose conversion to a function pointer
// nvcc warns it cannot deduce (#445-D).
struct NoKernel {
  template <int>
  void operator()() const {}
};

bool supported(int n) {
  return dispatch_size(n, NoKernel{});
}

std::vector<std::complex<float>> twiddle_table(int n) {
  std::vector<std::complex<float>> t(std::size_t(std::max(n, 1)), 1.f);
  const double pi = kPi;
  // The passes of fft_passes: radix 8 while 8 divides what is left, then 2 or 4; pass (Ns, R) at Ns - 1.
  for (int Ns = 1; Ns < n; Ns *= std::min(8, n / Ns)) {
    const int R = std::min(8, n / Ns);
    for (int r = 1; r < R; ++r)
      for (int k = 0; k < Ns; ++k) {
        // exp(-2 pi i r k / (Ns R)) as the plain table's entry m = r k n / (Ns R) (an integer): the same
        // bits.
        const double m = double(r) * double(k) * double(n / (Ns * R));
        const double a = -2.0 * pi * m / double(n);
        t[std::size_t(Ns - 1 + (r - 1) * Ns + k)] = {float(std::cos(a)), float(std::sin(a))};
      }
  }
  return t;
}

}  // namespace radstream::customfft
