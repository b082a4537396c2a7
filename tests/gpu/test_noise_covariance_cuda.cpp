// The noise covariance sum (linalg/noise_covariance.hpp): the CPU twin against the sum written out here in
// long double, and the CUDA twin against the CPU one, over several acquisitions of correlated noise; then a
// stream whose noise scans are summed on the GPU prewhitens its spokes as the CPU does.
#include <gtest/gtest.h>

#include <ismrmrd/ismrmrd.h>

#include <complex>
#include <cstring>
#include <random>
#include <vector>

#include "gpu_test_util.hpp"
#include "linalg/noise_covariance.hpp"
#include "stream/spoke_conditioner.hpp"

using namespace radstream;

namespace {

using cd = std::complex<double>;

// `acquisitions` blocks of [coils][samples] noise with coil k = sum_{m <= k} mix * white_m (correlated).
std::vector<std::vector<cfloat>> correlated_noise(int coils, int samples, int acquisitions) {
  std::mt19937 rng(20261129);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<std::vector<cfloat>> out;
  for (int a = 0; a < acquisitions; ++a) {
    std::vector<cfloat> white(std::size_t(coils) * samples), d(white.size());
    for (auto& v : white) v = cfloat(g(rng), g(rng));
    for (int k = 0; k < coils; ++k)
      for (int s = 0; s < samples; ++s) {
        cfloat acc = 0;
        for (int m = 0; m <= k; ++m)
          acc +=
              white[std::size_t(m) * samples + s] * cfloat(0.3f + 0.1f * float(m == k), 0.05f * float(k - m));
        d[std::size_t(k) * samples + s] = acc;
      }
    out.push_back(std::move(d));
  }
  return out;
}

double worst_relative(const std::vector<cd>& a, const std::vector<cd>& b) {
  double worst = 0, scale = 0;
  for (const auto& v : b) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / scale);
  return a.size() == b.size() ? worst : 1.0;
}

}  // namespace

TEST(NoiseCovariance, TheCpuSumIsTheSumOfOuterProducts) {
  const int C = 5, S = 300;
  const auto noise = correlated_noise(C, S, 3);
  auto cpu = make_noise_covariance_cpu(C);
  std::vector<std::complex<long double>> want(std::size_t(C) * C);
  for (const auto& d : noise) {
    cpu->add(d, S);
    for (int i = 0; i < C; ++i)
      for (int j = 0; j < C; ++j)
        for (int s = 0; s < S; ++s)
          want[std::size_t(i) * C + j] += std::complex<long double>(d[std::size_t(i) * S + s]) *
                                          std::conj(std::complex<long double>(d[std::size_t(j) * S + s]));
  }
  std::vector<cd> w(want.begin(), want.end());
  EXPECT_LT(worst_relative(cpu->sum(), w), 1e-13);
  EXPECT_THROW(cpu->add(noise[0], S + 1), InputError);
}

TEST(NoiseCovarianceCuda, TheGpuSumEqualsTheCpuSum) {
  RADSTREAM_REQUIRE_GPU();
  for (const int C : {1, 8, 33, 64}) {
    const int S = C == 64 ? 4096 : 777;
    const auto noise = correlated_noise(C, S, 3);
    auto cpu = make_noise_covariance_cpu(C);
    auto gpu = make_noise_covariance_cuda(C, -1);
    for (const auto& d : noise) {
      cpu->add(d, S);
      gpu->add(d, S);
    }
    const double e = worst_relative(gpu->sum(), cpu->sum());
    std::printf("noise covariance: %d coils x %d samples x 3: GPU vs CPU %.3g\n", C, S, e);
    EXPECT_LT(e, 1e-12) << C << " coils";
  }
}

// A stream's noise scans summed on the GPU condition its spokes as the CPU sum does: the same prewhitened
// spoke to float rounding (and unlike the raw one, so that the check can fail).
TEST(NoiseCovarianceCuda, AStreamPrewhitenedFromTheGpuSumEqualsTheCpuOne) {
  RADSTREAM_REQUIRE_GPU();
  const int C = 8, S = 512;
  const auto noise = correlated_noise(C, S, 4);
  const auto spoke = correlated_noise(C, S, 1).front();
  std::vector<float> traj(std::size_t(S) * 2, 0.f);
  ISMRMRD::ISMRMRD_AcquisitionHeader h{};
  h.number_of_samples = std::uint16_t(S);
  h.active_channels = std::uint16_t(C);
  h.center_sample = std::uint16_t(S / 2);
  h.sample_time_us = 5.f;
  const auto head = std::as_bytes(std::span(&h, 1));
  const auto conditioned = [&](NoisePrewhitener::MakeCovariance make) {
    SpokeConditioner cond;
    cond.new_stream(S, C, "", std::move(make));
    for (const auto& n : noise) {
      wire::Message m;
      m.head.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
      m.samples = S, m.coils = C, m.traj_dims = 2;
      m.data = std::as_bytes(std::span(n));
      m.traj = std::as_bytes(std::span(traj));
      std::span<const std::byte> ah = head;
      EXPECT_EQ(cond.take(m, ah), SpokeConditioner::Kind::Noise);
    }
    wire::Message m;
    m.samples = S, m.coils = C, m.traj_dims = 2;
    m.data = std::as_bytes(std::span(spoke));
    m.traj = std::as_bytes(std::span(traj));
    std::span<const std::byte> ah = head;
    EXPECT_EQ(cond.take(m, ah), SpokeConditioner::Kind::Imaging);
    EXPECT_TRUE(cond.prewhitening());
    std::vector<cfloat> out(std::size_t(C) * S);
    std::memcpy(out.data(), m.data.data(), out.size() * sizeof(cfloat));
    return out;
  };
  const auto cpu = conditioned(make_noise_covariance_cpu);
  const auto gpu = conditioned([](int coils) { return make_noise_covariance_cuda(coils, -1); });
  EXPECT_LT(test::rel_error(gpu, cpu), 1e-5);
  EXPECT_GT(test::rel_error(spoke, cpu), 0.1);
}
