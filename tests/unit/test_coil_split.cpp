// The coil split of the iterative frame through its host twin: the host reduce group's sums
// (exact on integers, the same bits in every partition), its aborts (a failing or stalled partition never
// leaves the others waiting), and coil-split CG-SENSE with 1, 2 and 4 partitions against the unsplit solver
// (SenseOperatorCpu over all coils and the same CG) to 1e-6.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/trajectory.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/reducer.hpp"
#include "linalg/vector_ops.hpp"
#include "noncart/coil_split_parts.hpp"
#include "noncart/coil_split_sense.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

const NufftKernel kKernel{6, 2.0, 4096};

std::vector<float> golden_traj(int spokes, int samples) {
  return test::golden_trajectory(spokes, samples);
}

// A disc with an off-centre square: the object the simulated coils see.
std::vector<cfloat> object(int N) {
  std::vector<cfloat> x(std::size_t(N) * N);
  for (int y = 0; y < N; ++y)
    for (int i = 0; i < N; ++i) {
      const double r = std::hypot(i - N / 2 + 0.5, y - N / 2 + 0.5);
      float v = r < 0.4 * N ? 1.f : 0.f;
      if (i > N / 2 && i < N / 2 + N / 6 && y > N / 3 && y < N / 2) v = 2.f;
      x[std::size_t(y) * N + i] = v;
    }
  return x;
}

}  // namespace

TEST(CoilSplit, HostReduceSumsExactlyInEveryPartition) {
  const int parts = 3;
  const std::size_t n = 1001;
  auto group = make_host_reduce_group(parts, n, 10.0);
  std::vector<std::vector<cfloat>> v(parts);
  for (int p = 0; p < parts; ++p) {
    v[p].resize(n);
    for (std::size_t i = 0; i < n; ++i) v[p][i] = cfloat(float(i * (p + 1)), float(p) - float(i % 7));
  }
  std::vector<std::thread> t;
  for (int p = 0; p < parts; ++p)
    t.emplace_back([&, p] {
      for (int round = 0; round < 3; ++round)
        group->part(p).allreduce_sum(v[p].data(), n - std::size_t(round));
    });
  for (auto& th : t) th.join();
  // Round 0 sums all n; each later round doubles by P the shorter prefix again.
  for (std::size_t i = 0; i < n; ++i) {
    const int rounds = i < n - 2 ? 3 : (i < n - 1 ? 2 : 1);
    float scale = 1;
    for (int r = 1; r < rounds; ++r) scale *= float(parts);
    const cfloat want = scale * cfloat(float(i * 6), float(3) - 3.f * float(i % 7));
    for (int p = 0; p < parts; ++p) ASSERT_EQ(v[p][i], want) << "partition " << p << " value " << i;
  }
}

TEST(CoilSplit, HostReduceAbortAndStallNeverHang) {
  {  // a partition fails: the other's reduction throws with the reason
    auto group = make_host_reduce_group(2, 16, 60.0);
    std::vector<cfloat> a(16);
    std::string caught;
    std::thread waiter([&] {
      try {
        group->part(0).allreduce_sum(a.data(), 16);
      } catch (const std::exception& e) {
        caught = e.what();
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    group->abort("partition 1 failed: out of memory");
    waiter.join();
    EXPECT_NE(caught.find("partition 1 failed: out of memory"), std::string::npos) << caught;
  }
  {  // a partition stalls: the wait times out, says so, and the group stays aborted
    auto group = make_host_reduce_group(2, 16, 0.2);
    std::vector<cfloat> a(16);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      group->part(0).allreduce_sum(a.data(), 16);
      FAIL() << "a reduction with a stalled partition returned";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("stalled"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    EXPECT_THROW(group->part(1).allreduce_sum(a.data(), 16), Error);
  }
}

namespace {

// E^H E x plus a rounding-sized error (relative 6e-8 of the output's rms, fresh each application): the
// unsplit solver as disturbed as any other summation order would disturb it (the float CG's own floor).
class RoundingNoise final : public LinearOperator {
 public:
  explicit RoundingNoise(SenseOperatorCpu& op)
      : LinearOperator(op.domain(), op.codomain(), Location::Host), op_(op) {}
  void forward(const cfloat* x, cfloat* y) override { op_.forward(x, y); }
  void adjoint(const cfloat* y, cfloat* x) override { op_.adjoint(y, x); }
  void normal(const cfloat* x, cfloat* z) override {
    op_.normal(x, z);
    const std::size_t n = domain().size();
    double ms = 0;
    for (std::size_t i = 0; i < n; ++i) ms += std::norm(z[i]);
    const auto e = test::random_complex(n, ++seed_);
    const float scale = float(6e-8 * std::sqrt(ms / double(n)));
    for (std::size_t i = 0; i < n; ++i) z[i] += scale * e[i];
  }

 private:
  SenseOperatorCpu& op_;
  unsigned seed_ = 100;
};

struct SplitCase {
  std::vector<double> err;                  // split (1, 2, 4 partitions) vs the unsplit solver
  std::vector<std::vector<cfloat>> images;  // the split's images (1, 2, 4 partitions)
  double floor = 0;                         // the unsplit solver disturbed at rounding level vs itself
};

// 8 coils, 32^2, 40 golden-angle spokes of 64, the object plus noise; CG-SENSE with lambda 1e-2 (relative).
SplitCase split_case(int iterations) {
  const int N = 32, coils = 8, spokes = 40, samples = 64;
  const std::size_t pixels = std::size_t(N) * N;
  const auto traj = golden_traj(spokes, samples);
  const std::size_t points = traj.size() / 2;
  const auto maps = test::smooth_coil_maps(N, coils);
  SenseOperatorCpu full(N, coils, points, kKernel, true, 1);
  full.set_maps(maps.data());
  full.set_points(traj.data(), nullptr);
  std::vector<cfloat> data(std::size_t(coils) * points);
  const auto x_true = object(N);
  full.forward(x_true.data(), data.data());
  const auto noise = test::random_complex(data.size(), 11);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] += 0.05f * noise[i];

  // The unsplit solver: b = E^H y, (E^H E + lambda_abs I) x = b from zeros.
  CoilSplitOptions o;
  o.iterations = iterations;
  o.lambda = 1e-2;
  double peak = 0;
  for (std::size_t i = 0; i < pixels; ++i) {
    double s = 0;
    for (int c = 0; c < coils; ++c) s += std::norm(std::complex<double>(maps[c * pixels + i]));
    peak = std::max(peak, s);
  }
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(pixels, *ops);
  Vector b(pixels, Location::Host), x(pixels, Location::Host);
  full.adjoint(data.data(), b.data());
  CgOptions co;
  co.max_iterations = o.iterations;
  co.lambda = o.lambda * full.weight_sum() * peak;
  const CgReport ref_report = cg.solve(full, b.data(), x.data(), co, false);
  const std::vector<cfloat> reference(x.data(), x.data() + pixels);
  EXPECT_LT(test::rel_error(reference, x_true), 0.5);  // a real reconstruction of the object, not zeros

  SplitCase out;
  RoundingNoise disturbed(full);
  cg.solve(disturbed, b.data(), x.data(), co, false);
  out.floor = test::rel_error(std::vector<cfloat>(x.data(), x.data() + pixels), reference);
  for (int parts : {1, 2, 4}) {
    auto split = make_coil_split_sense_cpu(N, coils, points, kKernel, o, parts, 1);
    split->set_frame(traj.data(), data.data(), maps.data());
    const CgReport r = split->solve();
    std::vector<cfloat> img(pixels);
    split->image(img.data());
    out.err.push_back(test::rel_error(img, reference));
    out.images.push_back(img);
    std::printf(
        "coil split, %d iterations, %d partition(s): vs unsplit %.3g (rounding floor %.3g), residual %.4g "
        "(unsplit %.4g)\n",
        iterations, parts, out.err.back(), out.floor, r.residual, ref_report.residual);
    EXPECT_EQ(split->coils_of(parts - 1).second, coils);
    EXPECT_EQ(r.iterations, iterations);
  }
  EXPECT_THROW(make_coil_split_sense_cpu(N, coils, points, kKernel, o, 9, 1), ConfigError);  // 9 > 8 coils
  return out;
}

}  // namespace

// The split's sums are formed in double per partition, added in double and rounded once: 1, 2 and 4
// partitions give the same bits. Against the unsplit float solver (float coil sums), where the float CG
// reproduces itself to 1e-6 (up to 4-5 iterations here), the split agrees to 1e-6 (4 iterations).
TEST(CoilSplit, SplitCgSenseEqualsTheUnsplitSolverWith1_2_4Partitions) {
  const SplitCase c = split_case(4);
  for (std::size_t i = 1; i < c.images.size(); ++i)
    EXPECT_EQ(c.images[i], c.images[0]) << "partitions case " << i;
  for (double e : c.err) EXPECT_LT(e, 1e-6);
}

// Deeper in, float CG amplifies any change of summation order (measured: the unsplit solver with a
// rounding-sized disturbance per application moves by the floor printed), so the split (double sums) and the
// unsplit float solver part by a few times that floor; the split itself still gives the same bits for 1, 2
// and 4 partitions (what M3's "error vs one GPU" asks of the GPUs).
TEST(CoilSplit, SplitCgSenseAt10IterationsStaysWithinTheFloatSolversOwnFloor) {
  const SplitCase c = split_case(10);
  for (std::size_t i = 1; i < c.images.size(); ++i)
    EXPECT_EQ(c.images[i], c.images[0]) << "partitions case " << i;
  EXPECT_GT(c.floor, 0.0);
  for (double e : c.err) EXPECT_LT(e, 4 * c.floor + 1e-6);
}

// The live stage passes the frame's coil-map version: an unchanged nonzero version means the maps are not
// taken (copied, their peak power measured) again; a new version, or 0, takes them.
TEST(CoilSplit, MapsAreTakenAgainOnlyWhenTheirVersionChanges) {
  const int N = 32, coils = 8;
  const std::size_t pixels = std::size_t(N) * N;
  const auto traj = golden_traj(40, 64);
  const std::size_t points = traj.size() / 2;
  const auto maps = test::smooth_coil_maps(N, coils);
  std::vector<cfloat> other(maps.size());  // different maps: each coil turned by its own phase, scaled by 0.7
  for (std::size_t i = 0; i < maps.size(); ++i)
    other[i] = maps[i] * std::polar(0.7f, 0.4f * float(i / pixels));
  SenseOperatorCpu full(N, coils, points, kKernel, true, 1);
  full.set_maps(maps.data());
  full.set_points(traj.data(), nullptr);
  std::vector<cfloat> data(std::size_t(coils) * points);
  full.forward(object(N).data(), data.data());
  CoilSplitOptions o;
  o.iterations = 4;
  auto image_of = [&](CoilSplitSense& s, const std::vector<cfloat>& m, std::uint64_t version) {
    s.set_frame(traj.data(), data.data(), m.data(), version);
    s.solve();
    std::vector<cfloat> img(pixels);
    s.image(img.data());
    return img;
  };
  auto split = make_coil_split_sense_cpu(N, coils, points, kKernel, o, 2, 1);
  auto fresh = make_coil_split_sense_cpu(N, coils, points, kKernel, o, 2, 1);
  const auto with_maps = image_of(*split, maps, 7);
  const auto with_other = image_of(*fresh, other, 0);
  EXPECT_GT(test::rel_error(with_other, with_maps), 1e-2);  // the two maps give different images
  EXPECT_EQ(image_of(*split, other, 7), with_maps);         // same version: the held maps
  EXPECT_EQ(image_of(*split, other, 8), with_other);        // new version: taken
  EXPECT_EQ(image_of(*split, maps, 0), with_maps);          // 0: always taken
  EXPECT_EQ(image_of(*split, other, 0), with_other);
}

namespace {

// A reduce group whose partition 1 blocks until the group is aborted (as NCCL's one-process launch blocks
// until its partner launches): what the solver's watchdog must get out of.
class BlockingGroup final : public ReduceGroup {
 public:
  int size() const override { return 2; }
  Reducer& part(int) override { throw Error("not used"); }
  std::string kind() const override { return "blocking"; }
  void abort(const std::string& why) override {
    {
      std::lock_guard lock(m);
      if (reason.empty()) reason = why;
    }
    cv.notify_all();
  }
  void block() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return !reason.empty(); });
    throw Error("coil split: " + reason);
  }
  std::mutex m;
  std::condition_variable cv;
  std::string reason;
};

}  // namespace

TEST(CoilSplit, TheWatchdogAbortsAPartitionStuckInItsReduction) {
  BlockingGroup g;
  PartThreads threads(2, g);
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    threads.run(
        [&](int p) {
          if (p == 1) g.block();
        },
        0.3);
  } catch (const std::exception& e) {
    what = e.what();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(what.find("did not finish within 0.3"), std::string::npos) << what;
  EXPECT_LT(s, 3.0);
  // The partition threads came back and serve the next call (a healthy one returns normally).
  int ran = 0;
  std::mutex m;
  threads.run(
      [&](int) {
        std::lock_guard lock(m);
        ++ran;
      },
      5.0);
  EXPECT_EQ(ran, 2);
}
