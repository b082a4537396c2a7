// The Kaiser-Bessel gridding kernel, tabulated once (Jackson 1991; Beatty 2005), with linear interpolation.
// Distances are in cells of the oversampled grid; the kernel is C(t) = I0(beta sqrt(1 - (2t/W)^2)) / I0(beta)
// for |t| < W/2, with Beatty's beta = pi sqrt((W/sigma)^2 (sigma - 0.5)^2 - 0.8).
#pragma once
#include <vector>

namespace radstream {

// Size of the oversampled grid for a matrix N at oversampling sigma: the smallest even integer >= sigma N.
int oversampled_grid_size(int matrix, double sigma);

double beatty_beta(int width, double sigma);

class KaiserBesselLut {
 public:
  // width W in grid cells, oversampling sigma, table entries per grid cell.
  KaiserBesselLut(int width, double sigma, int resolution);

  int width() const { return width_; }
  double beta() const { return beta_; }
  int resolution() const { return resolution_; }
  // Table entries at t = i / resolution, i = 0 .. resolution * W / 2 + 1 (the last repeats the edge value).
  const std::vector<float>& table() const { return table_; }

  // The tabulated kernel at distance t (grid cells), linearly interpolated; 0 for |t| >= W/2.
  float operator()(float t) const {
    const float x = (t < 0 ? -t : t) * float(resolution_);
    const int i = int(x);
    if (i >= edge_) return 0.f;
    const float f = x - float(i);
    return table_[i] + f * (table_[i + 1] - table_[i]);
  }

  // Continuous Fourier transform of the interpolated kernel at frequency f (cycles per grid cell), exact for
  // the piecewise-linear table: the deapodization divides by this.
  double fourier(double f) const;

  // The kernel itself, without the table (for tests).
  double exact(double t) const;

 private:
  int width_;
  double sigma_;
  double beta_;
  int resolution_;
  int edge_;  // resolution * W / 2
  std::vector<float> table_;
};

}  // namespace radstream
