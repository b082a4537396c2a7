#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "sim/bessel.hpp"
#include "sim/phantom.hpp"
#include "sim/simulator.hpp"

using namespace radstream;

TEST(Phantom, BesselJ1MatchesTheStandardLibrary) {
  double worst = 0;
  for (double x = -40; x <= 40; x += 0.01)
    worst = std::max(worst, std::abs(bessel_j1(x) - std::cyl_bessel_j(1.0, std::abs(x)) * (x < 0 ? -1 : 1)));
  EXPECT_LT(worst, 1e-7);
}

// The simulator's k-space is the exact transform of the ellipses: compare with a brute-force DFT of the
// phantom rasterized on a fine grid, at low frequencies where the rasterization is accurate.
TEST(Phantom, KspaceMatchesBruteForceDftOfFineRaster) {
  SimParams p;
  p.matrix = 64;
  p.coils = 4;
  p.motion = true;
  const Simulator sim(p);
  const auto ellipses = sim.ellipses_at(0.3);
  const int M = 512;  // fine raster of the FOV [-1, 1]^2
  const auto img = rasterize(ellipses, M, 4);
  const CoilMaps maps(p.coils);
  const double px = 2.0 / M;
  const int N = p.matrix;
  double worst = 0, scale = 0;
  for (int coil = 0; coil < p.coils; ++coil) {
    for (const auto& k :
         std::vector<std::array<double, 2>>{{0, 0}, {0.02, 0}, {0, -0.03}, {0.05, 0.04}, {-0.08, 0.02}}) {
      // d(k) = sum_x m(x) s(x) exp(-2 pi i k.x) in pixels of the N-matrix; the fine raster has (M/N)^2 cells
      // per pixel.
      std::complex<double> dft = 0;
      for (int j = 0; j < M; ++j)
        for (int i = 0; i < M; ++i) {
          const double x = (i - M / 2) * px, y = (j - M / 2) * px;
          const double v = img[std::size_t(j) * M + i];
          if (v == 0) continue;
          const double xp = x * N / 2, yp = y * N / 2;  // position in pixels
          const double ph = -2 * M_PI * (k[0] * xp + k[1] * yp);
          dft += v * std::complex<double>(std::cos(ph), std::sin(ph)) * maps.value(coil, x, y) *
                 (double(N) * N / (double(M) * M));
        }
      const auto exact = sim.kspace(ellipses, coil, k[0], k[1]);
      worst = std::max(worst, std::abs(exact - dft));
      scale = std::max(scale, std::abs(exact));
    }
  }
  EXPECT_LT(worst / scale, 5e-3) << "worst " << worst << " of " << scale;
}

TEST(Phantom, NoiseHasTheRequestedSnr) {
  SimParams p;
  p.matrix = 64;
  p.coils = 2;
  p.snr = 10;
  const Simulator noisy(p);
  p.snr = 0;
  const Simulator clean(p);
  double sig = 0, err = 0;
  for (int i = 0; i < 50; ++i) {
    const auto a = noisy.spoke(i), b = clean.spoke(i);
    for (std::size_t n = 0; n < a.data.size(); ++n) {
      sig += std::norm(b.data[n]);
      err += std::norm(a.data[n] - b.data[n]);
    }
  }
  // The reference level is the RMS over 16 evenly spaced angles; 50 golden-angle spokes sample them evenly.
  EXPECT_NEAR(std::sqrt(sig / err), 10.0, 0.8);
  EXPECT_EQ(noisy.spoke(7).data, noisy.spoke(7).data);  // deterministic per spoke
}
