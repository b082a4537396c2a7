// The time-segmented field-corrected SENSE normal operator as L(L+1)/2 Toeplitz kernels (S4's
// form) against the time-segmented operator's own forward-then-adjoint (accurate NUFFT), for 1 to 8 segments;
// its pair bookkeeping; its errors.
#include <gtest/gtest.h>

#include "exact/segmented_toeplitz.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {
const NufftKernel kAccurate{6, 2.0, 4096};
}  // namespace

TEST(SegmentedToeplitz, PairsCoverEachUnorderedPairOnce) {
  for (int L = 1; L <= kMaxToeplitzSegments; ++L) {
    std::vector<int> seen(std::size_t(L * (L + 1) / 2), 0);
    for (int l = 0; l < L; ++l)
      for (int lp = l; lp < L; ++lp) {
        ASSERT_EQ(segment_pair(l, lp, L), segment_pair(lp, l, L));
        ++seen.at(std::size_t(segment_pair(l, lp, L)));
      }
    for (int v : seen) EXPECT_EQ(v, 1) << "L " << L;
  }
  TimeSegments seg;
  seg.times = {0.f, 1.f};
  seg.weights = {1.f, 0.25f, 0.f, 0.75f};  // [2][2]
  const auto w = segment_pair_weights(seg);
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0], cfloat(1.f));      // (0,0), m = 0
  EXPECT_EQ(w[1], cfloat(0.0625f));  // (0,0), m = 1
  EXPECT_EQ(w[3], cfloat(0.1875f));  // (0,1), m = 1
  EXPECT_EQ(w[5], cfloat(0.5625f));  // (1,1), m = 1
}

TEST(SegmentedToeplitz, NormalEqualsTheTimeSegmentedForwardThenAdjoint) {
  const int N = 24, C = 3, spokes = 24, samples = 48;
  const auto traj = test::golden_trajectory(spokes, samples);
  const std::size_t Mt = traj.size() / 2;
  const auto maps = test::smooth_coil_maps(N, C);
  SegmentedToeplitzSpec spec{
      N, C, maps.data(), test::smooth_field_map(N, 80.0), test::readout_times(spokes, samples, 2e-3, 8e-5),
      4};
  auto sense = std::make_shared<SenseOperatorCpu>(N, C, Mt, kAccurate, false);
  sense->set_maps(maps.data());
  sense->set_points(traj.data());
  NufftOperatorCpu psf(2, std::array<int, 3>{2 * N, 2 * N, 1}, 1, Mt, kAccurate);
  psf.set_points(traj.data());
  const auto x = test::random_complex(std::size_t(N) * N, 5);
  for (int L : {1, 2, 4, 8}) {
    spec.segments = L;
    auto g = std::make_shared<TimeSegmentedCpu>(sense, spec.fm, spec.t, L);
    SegmentedToeplitzCpu t(g, spec);
    EXPECT_THROW(t.normal(x.data(), std::vector<cfloat>(x.size()).data()), InputError);
    t.make_kernels(psf);
    std::vector<cfloat> zt(x.size()), zd(x.size());
    t.normal(x.data(), zt.data());
    t.normal_direct(x.data(), zd.data());
    const double err = test::rel_error(zt, zd);
    std::printf("%d segments: Toeplitz vs forward-then-adjoint %.3g\n", L, err);
    EXPECT_LT(err, 1e-4) << L << " segments";
    EXPECT_LT(check_adjoint(t).relative_error, 1e-5);
  }
  spec.segments = 9;
  auto g9 = std::make_shared<TimeSegmentedCpu>(sense, spec.fm, spec.t, 9);
  EXPECT_THROW(SegmentedToeplitzCpu(g9, spec), ConfigError);
  spec.segments = 4;
  spec.fm.pop_back();
  auto g4 = std::make_shared<TimeSegmentedCpu>(sense, test::smooth_field_map(N, 80.0), spec.t, 4);
  EXPECT_THROW(SegmentedToeplitzCpu(g4, spec), InputError);
}
