// A complex image as the chains give their images: each value's magnitude in the real part, zero imaginary.
#pragma once
#include <complex>
#include <cstddef>

namespace radstream {

// out[i] = (|x[i]|, 0); out may be x.
inline void magnitude_image(const std::complex<float>* x, std::size_t n, std::complex<float>* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::complex<float>(std::abs(x[i]), 0.f);
}

}  // namespace radstream
