// The custom FFT engine's host side (custom_fft.cuh) that every layer may use: the sizes it takes and the
// twiddle factors, in double before rounding.
#include <cmath>

#include "core/math.hpp"
#include "fft/custom_fft.cuh"

namespace radstream::customfft {

bool supported(int n) {
  return dispatch_size(n, []<int>() {});
}

std::vector<float2> twiddle_table(int n) {
  std::vector<float2> t(n);
  const double pi = kPi;
  for (int m = 0; m < n; ++m) {
    const double a = -2.0 * pi * double(m) / double(n);
    t[m] = make_float2(float(std::cos(a)), float(std::sin(a)));
  }
  return t;
}

}  // namespace radstream::customfft
