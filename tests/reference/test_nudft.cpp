// Gridding adjoint against the exact non-uniform DFT in double precision, on random trajectories and data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/frame.hpp"
#include "noncart/kaiser_bessel.hpp"
#include "recon/recon_chain.hpp"
#include "sim/nudft.hpp"

using namespace radstream;

namespace {

struct Case {
  int width;
  double sigma;
  int lut = 1024;
};

// Relative l2 error of the chain's (complex, single-coil) image against the exact adjoint NUDFT.
double adjoint_error(const Case& c, int N = 32, int M = 3000, unsigned seed = 7) {
  Geometry g{N, 2, M / 2, 1, 1.f};  // M random samples packed as M/2 "spokes" of 2
  Frame f(g);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  std::normal_distribution<float> d(0.f, 1.f);
  for (std::size_t i = 0; i < f.traj.size(); ++i) f.traj[i] = k(rng);
  for (std::size_t i = 0; i < f.data.size(); ++i) f.data[i] = cfloat(d(rng), d(rng));
  ReconParams p;
  p.backend = BackendChoice::Cpu;
  p.density.method = DcfMethod::None;
  p.gridding.width = c.width;
  p.gridding.oversampling = c.sigma;
  p.gridding.lut_resolution = c.lut;
  p.fft.planner = FftPlanner::Estimate;
  ReconChain chain(p, Backend::Cpu, default_registry());
  chain.configure(g);
  chain.reconstruct(f);
  const auto img = chain.coil_images();
  const auto ref = adjoint_nudft(f.traj.view().span(), f.data.view().span(), {}, N);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(std::complex<double>(img.data[i]) - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

// Theory (Jackson 1991; Beatty 2005): the aliasing error at image position x is the energy of the kernel
// transform's replicas c_hat(x/G + p), p != 0, relative to c_hat(x/G). Its RMS over the image bounds the l2
// error of the adjoint on white data.
double predicted_error(int width, double sigma, int N) {
  const KaiserBesselLut lut(width, sigma, 1024);
  const int G = oversampled_grid_size(N, sigma);
  double acc = 0;
  for (int x = -N / 2; x < N / 2; ++x) {
    const double main = lut.fourier(double(x) / G);
    double alias = 0;
    for (int p = -20; p <= 20; ++p)
      if (p) alias += std::pow(lut.fourier(double(x) / G + p), 2);
    acc += alias / (main * main);
  }
  return std::sqrt(acc / N);
}

}  // namespace

TEST(GriddingVsNudft, Sigma2Width6Within1e4) {
  const double e = adjoint_error({6, 2.0});
  RecordProperty("relative_error", std::to_string(e));
  std::printf("sigma 2, W 6: relative error %.3g\n", e);
  EXPECT_LE(e, 1e-4);
}

TEST(GriddingVsNudft, Sigma2Width4Within2e3) {
  const double e = adjoint_error({4, 2.0});
  std::printf("sigma 2, W 4: relative error %.3g\n", e);
  EXPECT_LE(e, 2e-3);
}

TEST(GriddingVsNudft, Sigma125Width4WithinTheoreticalAliasingBound) {
  // In 2D the separable kernel's aliasing adds over both axes: bound = sqrt(2) x the 1D prediction, with a
  // factor 1.5 of margin for the finite random sample.
  const double predicted = std::sqrt(2.0) * predicted_error(4, 1.25, 32);
  const double e = adjoint_error({4, 1.25});
  std::printf("sigma 1.25, W 4: relative error %.3g, theoretical %.3g\n", e, predicted);
  EXPECT_LE(e, 1.5 * predicted);
  EXPECT_LE(e, 5e-2);
}

TEST(GriddingVsNudft, Sigma125Width6) {
  const double predicted = std::sqrt(2.0) * predicted_error(6, 1.25, 32);
  const double e = adjoint_error({6, 1.25});
  std::printf("sigma 1.25, W 6: relative error %.3g, theoretical %.3g\n", e, predicted);
  EXPECT_LE(e, 1.5 * predicted);
}

TEST(GriddingVsNudft, CoarseLookupTableCostsAccuracy) {
  // The table's resolution matters: 16 entries per cell is visibly worse than 1024 at W 6.
  const double fine = adjoint_error({6, 2.0, 1024});
  const double coarse = adjoint_error({6, 2.0, 16});
  std::printf("W 6 sigma 2: LUT 1024 -> %.3g, LUT 16 -> %.3g\n", fine, coarse);
  EXPECT_GT(coarse, 3 * fine);
  EXPECT_LE(adjoint_error({6, 2.0, 256}), 2e-4);
}

TEST(GriddingVsNudft, NonSquareFriendlySizes) {
  // A matrix that is not a power of two (N = 48, grid 96).
  EXPECT_LE(adjoint_error({6, 2.0}, 48, 1001 * 2), 1e-4);
}
