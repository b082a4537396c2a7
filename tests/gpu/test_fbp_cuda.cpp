// FBP on the GPU against its CPU twin: each stage on random data (golden, linear 360-degree and shifted
// spokes), and the whole FBP chain with both FFT engines on the phantom. Skips without a GPU;
// RADSTREAM_REQUIRE_GPU=1 makes that a failure.
#include "gpu/gpu_test_util.hpp"
#include "io/frame_io.hpp"
#include "sim/simulator.hpp"
#include "stages/fbp/fbp.hpp"

using namespace radstream;
using namespace radstream::gputest;

namespace {

StageRun with_angles(StageRun r, int P, int S, bool full_circle, double shift) {
  for (int p = 0; p < P; ++p) {
    const double th = full_circle ? 2 * 3.14159265358979 * p / P : AngleSpec{}.angle(p);
    for (int n = 0; n < S; ++n) {
      const double k = (n - S / 2 + shift) / S;
      r.traj[(std::size_t(p) * S + n) * 2] = float(k * std::cos(th));
      r.traj[(std::size_t(p) * S + n) * 2 + 1] = float(k * std::sin(th));
    }
  }
  return r;
}

}  // namespace

TEST(FbpCuda, StagesMatchTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  for (auto [full, shift] : std::vector<std::pair<bool, double>>{{false, 0.0}, {true, 0.0}, {false, 0.5}}) {
    const int N = 64, S = 128, P = 90, C = 3;
    StageRun r = with_angles(random_radial(N, S, P, C, 11), P, S, full, shift);
    for (const char* fft : {"cufft", "custom"}) {
      auto p = params();
      auto pc = p;
      pc.fft.engine = parse_fft_engine(fft);
      const double e = rel_error(run_stage("fbp_project", Backend::Cuda, pc, r),
                                 run_stage("fbp_project", Backend::Cpu, p, r));
      std::printf("fbp_project (%s, %s, shift %.1f): CUDA vs CPU %.3g\n", fft, full ? "360" : "golden", shift,
                  e);
      EXPECT_LE(e, 1e-5);
    }
    StageRun b = r;
    const int Pf = fbp_fft_size(S);
    b.in_ext = Extents{std::size_t(C), std::size_t(P), std::size_t(Pf)};
    b.in.resize(b.in_ext.size());
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.f, 1.f);
    for (auto& v : b.in) v = cfloat(d(rng), d(rng));
    const auto p = params();
    const double e = rel_error(run_stage("backproject", Backend::Cuda, p, b),
                               run_stage("backproject", Backend::Cpu, p, b));
    std::printf("backproject (%s, shift %.1f): CUDA vs CPU %.3g\n", full ? "360" : "golden", shift, e);
    EXPECT_LE(e, 1e-5);
  }
}

TEST(FbpCuda, WholeChainMatchesTheCpuChain) {
  RADSTREAM_REQUIRE_GPU();
  const Frame f = phantom_frame(128, 8, 30, 160);
  auto p = params();
  p.method = ReconMethod::Fbp;
  ReconChain cpu(p, Backend::Cpu, default_registry());
  cpu.configure(f.geometry);
  const auto a = cpu.reconstruct(f);
  const std::vector<cfloat> ref(a.data, a.data + a.size());
  for (const char* fft : {"cufft", "custom"}) {
    auto pg = p;
    pg.fft.engine = parse_fft_engine(fft);
    ReconChain gpu(pg, Backend::Cuda, default_registry());
    gpu.configure(f.geometry);
    const auto b = gpu.reconstruct(f);
    const double e = rel_error(std::vector<cfloat>(b.data, b.data + b.size()), ref);
    std::printf("FBP chain (%s): CUDA vs CPU %.3g\n", fft, e);
    EXPECT_LE(e, 1e-5);
  }
}
