#include "noncart/nufft_kernel.hpp"

namespace radstream {

AxisApodization make_axis_apodization(int matrix, int grid, const KaiserBesselLut& lut) {
  AxisApodization a;
  a.src.resize(matrix);
  a.factor.resize(matrix);
  for (int i = 0; i < matrix; ++i) {
    const int p = i - matrix / 2;
    a.src[i] = ((p % grid) + grid) % grid;
    const double sign = (p % 2 == 0) ? 1.0 : -1.0;
    a.factor[i] = float(sign / lut.fourier(double(p) / grid));
  }
  return a;
}

}  // namespace radstream
