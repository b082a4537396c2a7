// CUDA vs CPU parity for every stage of the gridding chain and for the whole chain, cuFFT vs FFTW, and the
// GPU gridding against the exact NUDFT. Without a GPU these skip with the reason; with
// RADSTREAM_REQUIRE_GPU=1 a missing GPU fails them (so a GPU run cannot pass by skipping).
#include "gpu/gpu_test_util.hpp"
#include "io/frame_io.hpp"
#include "sim/nudft.hpp"
#include "sim/simulator.hpp"
#include "tests/stages/temporal_mean/temporal_mean.hpp"

using namespace radstream;
using namespace radstream::gputest;

TEST(CudaParity, DensityEveryMethod) {
  RADSTREAM_REQUIRE_GPU();
  const auto r = random_radial(64, 128, 89, 3, 1);
  for (const char* m : {"none", "ramp", "ramp-dc", "voronoi"}) {
    auto p = params();
    p.density.method = parse_dcf(m);
    const double e =
        rel_error(run_stage("density", Backend::Cuda, p, r), run_stage("density", Backend::Cpu, p, r));
    std::printf("density %s: CUDA vs CPU %.3g\n", m, e);
    EXPECT_LE(e, 1e-5) << m;
  }
}

TEST(CudaParity, GriddingWidths4And6Sigma2And125) {
  RADSTREAM_REQUIRE_GPU();
  const auto r = random_radial(64, 128, 101, 4, 2);
  for (auto [w, s] : std::vector<std::pair<int, double>>{{4, 2.0}, {6, 2.0}, {4, 1.25}}) {
    auto p = params();
    p.gridding.width = w;
    p.gridding.oversampling = s;
    const double e =
        rel_error(run_stage("gridding", Backend::Cuda, p, r), run_stage("gridding", Backend::Cpu, p, r));
    std::printf("gridding W %d sigma %.2f: CUDA vs CPU %.3g\n", w, s, e);
    EXPECT_LE(e, 1e-5);
  }
}

// The density-weighted gridding (the weights applied inside the spread on the GPU) against its CPU twin (the
// weighted copy, then the spread) and against the density stage then the gridding stage on the GPU, for every
// weighting and both spread kernels: one coil or W 2 (a thread per cell), several coils at W 4..8 (a lane per
// coil).
TEST(CudaParity, DensityGriddingEqualsDensityThenGridding) {
  RADSTREAM_REQUIRE_GPU();
  for (auto [w, C] : std::vector<std::pair<int, int>>{{4, 1}, {2, 3}, {4, 3}, {6, 20}, {8, 5}}) {
    const auto r = random_radial(64, 128, 67, C, unsigned(10 * w + C));
    for (const char* m : {"none", "ramp", "ramp-dc", "voronoi"}) {
      auto p = params();
      p.density.method = parse_dcf(m);
      p.gridding.width = w;
      const auto gpu = run_stage("density_gridding", Backend::Cuda, p, r);
      const double e_cpu = rel_error(gpu, run_stage("density_gridding", Backend::Cpu, p, r));
      StageRun weighted = r;
      weighted.in = run_stage("density", Backend::Cuda, p, r);
      const double e_two = rel_error(gpu, run_stage("gridding", Backend::Cuda, p, weighted));
      std::printf("density_gridding %s W %d, %d coils: vs the CPU twin %.3g, vs density then gridding %.3g\n",
                  m, w, C, e_cpu, e_two);
      EXPECT_LE(e_cpu, 1e-5) << m << " W " << w << " coils " << C;
      EXPECT_LE(e_two, 1e-6) << m << " W " << w << " coils " << C;
    }
  }
}

TEST(CudaParity, CufftMatchesFftwAllSizes) {
  RADSTREAM_REQUIRE_GPU();
  for (int G = 64; G <= 2048; G *= 2) {
    for (int batch : {1, 4}) {
      StageRun r;
      r.g = Geometry{G / 2, 2, 1, batch, 1.f};
      r.in_ext = Extents{std::size_t(batch), std::size_t(G), std::size_t(G)};
      std::mt19937 rng(G + batch);
      std::normal_distribution<float> d(0.f, 1.f);
      r.in.resize(r.in_ext.size());
      for (auto& v : r.in) v = cfloat(d(rng), d(rng));
      const auto p = params();
      const double e = rel_error(run_stage("fft", Backend::Cuda, p, r), run_stage("fft", Backend::Cpu, p, r));
      std::printf("FFT %dx%d batch %d: cuFFT vs FFTW %.3g\n", G, G, batch, e);
      EXPECT_LE(e, 1e-5) << G << " batch " << batch;
    }
  }
}

TEST(CudaParity, DeapodizeAndCoilCombine) {
  RADSTREAM_REQUIRE_GPU();
  const int N = 96, G = 192, C = 5;
  StageRun r;
  r.g = Geometry{N, 192, 10, C, 2.f};
  r.in_ext = Extents{std::size_t(C), std::size_t(G), std::size_t(G)};
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.f, 1.f);
  r.in.resize(r.in_ext.size());
  for (auto& v : r.in) v = cfloat(d(rng), d(rng));
  const auto p = params();
  double e =
      rel_error(run_stage("deapodize", Backend::Cuda, p, r), run_stage("deapodize", Backend::Cpu, p, r));
  EXPECT_LE(e, 1e-5);
  r.in_ext = Extents{std::size_t(C), std::size_t(N), std::size_t(N)};
  r.in.resize(r.in_ext.size());
  e = rel_error(run_stage("coil_combine", Backend::Cuda, p, r),
                run_stage("coil_combine", Backend::Cpu, p, r));
  EXPECT_LE(e, 1e-5);
}

TEST(CudaParity, WholeChainOnThePhantom) {
  RADSTREAM_REQUIRE_GPU();
  const Frame f = phantom_frame(128, 8, 30, 144);
  for (const char* dcf : {"ramp-dc", "voronoi"}) {
    auto p = params();
    p.density.method = parse_dcf(dcf);
    ReconChain cpu(p, Backend::Cpu, default_registry()), gpu(p, Backend::Cuda, default_registry());
    cpu.configure(f.geometry);
    gpu.configure(f.geometry);
    const auto a = cpu.reconstruct(f), b = gpu.reconstruct(f);
    const std::vector<cfloat> va(a.data, a.data + a.size()), vb(b.data, b.data + b.size());
    const double e = rel_error(vb, va);
    std::printf("whole chain (%s): CUDA vs CPU %.3g\n", dcf, e);
    EXPECT_LE(e, 1e-5) << dcf;
    const auto ca = cpu.coil_images();
    const std::vector<cfloat> vca(ca.data, ca.data + ca.size());
    const auto cb = gpu.coil_images();
    const std::vector<cfloat> vcb(cb.data, cb.data + cb.size());
    EXPECT_LE(rel_error(vcb, vca), 1e-5);
  }
}

TEST(CudaParity, GpuGriddingVsExactNudft) {
  RADSTREAM_REQUIRE_GPU();
  const int N = 32, M = 3000;
  Geometry g{N, 2, M / 2, 1, 1.f};
  Frame f(g);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  std::normal_distribution<float> d(0.f, 1.f);
  for (std::size_t i = 0; i < f.traj.size(); ++i) f.traj[i] = k(rng);
  for (std::size_t i = 0; i < f.data.size(); ++i) f.data[i] = cfloat(d(rng), d(rng));
  const auto ref = adjoint_nudft(f.traj.view().span(), f.data.view().span(), {}, N);
  for (auto [w, bound] : std::vector<std::pair<int, double>>{{6, 1e-4}, {4, 2e-3}}) {
    auto p = params();
    p.density.method = DcfMethod::None;
    p.gridding.width = w;
    ReconChain chain(p, Backend::Cuda, default_registry());
    chain.configure(g);
    chain.reconstruct(f);
    const auto img = chain.coil_images();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      num += std::norm(std::complex<double>(img.data[i]) - ref[i]);
      den += std::norm(ref[i]);
    }
    const double e = std::sqrt(num / den);
    std::printf("GPU gridding W %d sigma 2 vs exact NUDFT: %.3g\n", w, e);
    EXPECT_LE(e, bound);
  }
}

// The example stage (tests/stages/temporal_mean) through the chain on both backends: its declared state is
// kept on the device across frames and zeroed by reset_state(), frame by frame equal to the CPU twin.
TEST(CudaParity, ExampleStageStateAcrossFrames) {
  RADSTREAM_REQUIRE_GPU();
  Registry reg = default_registry();
  reg.add_twins(
      "temporal_mean", [](const ReconParams&) { return make_temporal_mean_cpu(0.5f); },
      RADSTREAM_CUDA_TWIN([](const ReconParams&) { return make_temporal_mean_cuda(0.5f); }));
  SimParams sp;
  sp.matrix = 64;
  sp.coils = 4;
  const Simulator sim(sp);
  const auto p = params();
  std::vector<std::vector<cfloat>> out[2];
  const Backend backends[2] = {Backend::Cpu, Backend::Cuda};
  for (int b = 0; b < 2; ++b) {
    Recipe r = recipe_for(p, backends[b]);
    r.steps.push_back({"temporal_mean", "smoothed"});
    ReconChain chain(p, backends[b], reg, r);
    for (int k = 0; k < 4; ++k) {
      const Frame f = frame_from_spokes(sim.header(), sim.spokes(16 * k, 64));
      if (k == 0) chain.configure(f.geometry);
      if (k == 3) chain.reset_state();
      const auto img = chain.reconstruct(f);
      out[b].emplace_back(img.data, img.data + img.size());
    }
  }
  for (int k = 0; k < 4; ++k) {
    const double e = rel_error(out[1][k], out[0][k]);
    std::printf("temporal_mean frame %d: CUDA vs CPU %.3g\n", k, e);
    EXPECT_LE(e, 1e-5) << "frame " << k;
  }
}
