// The custom GPU FFT engine against cuFFT and FFTW (every supported size, both directions, batch 1 and 32),
// the fused custom-FFT chain tail against the CPU chain, and CUDA-graph replay against direct launches.
// Skip without a GPU; RADSTREAM_REQUIRE_GPU=1 makes a missing GPU fail them.
#include <algorithm>
#include <bit>
#include <cmath>

#include "core/math.hpp"
#include "fft/twiddle_table.hpp"
#include "gpu/gpu_test_util.hpp"
#include "io/frame_io.hpp"
#include "recon/coil_map_estimate.hpp"
#include "sim/simulator.hpp"

using namespace radstream;
using namespace radstream::gputest;

namespace {

StageRun random_grids(int G, int batch, unsigned seed) {
  StageRun r;
  r.g = Geometry{G / 2, 2, 1, batch, 1.f};
  r.in_ext = Extents{std::size_t(batch), std::size_t(G), std::size_t(G)};
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  r.in.resize(r.in_ext.size());
  for (auto& v : r.in) v = cfloat(d(rng), d(rng));
  return r;
}

std::vector<cfloat> image_of(ReconChain& chain, const Frame& f) {
  const auto v = chain.reconstruct(f);
  return std::vector<cfloat>(v.data, v.data + v.size());
}

}  // namespace

TEST(CustomFft, MatchesCufftAndFftwEverySizeBothDirectionsBatch1And32) {
  RADSTREAM_REQUIRE_GPU();
  for (int G = 64; G <= 2048; G *= 2) {
    for (int batch : {1, 32}) {
      const StageRun r = random_grids(G, batch, unsigned(G * 100 + batch));
      for (const char* stage : {"fft_forward", "fft"}) {
        auto p = params();
        const auto fftw = run_stage(stage, Backend::Cpu, p, r);
        p.fft.engine = FftEngine::Cufft;
        const auto cufft = run_stage(stage, Backend::Cuda, p, r);
        p.fft.engine = FftEngine::Custom;
        const auto custom = run_stage(stage, Backend::Cuda, p, r);
        const double e_fftw = rel_error(custom, fftw), e_cufft = rel_error(custom, cufft),
                     e_ref = rel_error(cufft, fftw);
        std::printf("%s %4dx%-4d batch %2d: custom vs FFTW %.3g, custom vs cuFFT %.3g, cuFFT vs FFTW %.3g\n",
                    stage, G, G, batch, e_fftw, e_cufft, e_ref);
        EXPECT_LE(e_fftw, 1e-5) << stage << " " << G << " batch " << batch;
        EXPECT_LE(e_cufft, 1e-5) << stage << " " << G << " batch " << batch;
        EXPECT_LE(e_ref, 1e-5) << stage << " " << G << " batch " << batch;
      }
    }
  }
}

#ifdef RADSTREAM_HAVE_CUDA
// The twiddle table in the passes' read order (host only, no GPU): pass (Ns, R) at Ns - 1 + (r - 1) Ns + k
// holds exp(-2 pi i r k / (Ns R)), the same float as the plain table's entry m = r k n / (Ns R), for every
// size; the passes fill n - 1 entries.
TEST(CustomFft, TwiddleTableHoldsEachPassFactorsWhereThePassReadsThem) {
  for (int n = 64; n <= 2048; n *= 2) {
    const auto t = customfft::twiddle_table(n);
    ASSERT_EQ(t.size(), std::size_t(n));
    std::vector<int> hits(std::size_t(n), 0);
    int passes = 0;
    for (int Ns = 1; Ns < n; ++passes) {
      const int R = n / Ns >= 8 ? 8 : n / Ns;
      for (int r = 1; r < R; ++r)
        for (int k = 0; k < Ns; ++k) {
          const std::size_t i = std::size_t(Ns - 1 + (r - 1) * Ns + k);
          ASSERT_LT(i, t.size());
          ++hits[i];
          const long m = long(r) * k * (n / (Ns * R));
          const double a = -2.0 * kPi * double(m) / double(n);
          EXPECT_EQ(t[i].real(), float(std::cos(a))) << "n " << n << " Ns " << Ns << " r " << r << " k " << k;
          EXPECT_EQ(t[i].imag(), float(std::sin(a))) << "n " << n << " Ns " << Ns << " r " << r << " k " << k;
        }
      Ns *= R;
    }
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), n - 1) << "n " << n;
    EXPECT_EQ(passes, (std::countr_zero(unsigned(n)) + 2) / 3) << "n " << n;  // ceil(log2(n) / 3)
  }
}
#endif

TEST(CustomFft, UnsupportedGridSizeIsAConfigErrorNamingTheSize) {
  RADSTREAM_REQUIRE_GPU();
  auto p = params();
  p.fft.engine = FftEngine::Custom;
  p.gridding.oversampling = 1.25;  // 128 -> 160: not a power of two
  for (bool fused : {true, false}) {
    p.fft.fused = fused;
    ReconChain chain(p, Backend::Cuda, default_registry());
    try {
      chain.configure(Geometry{128, 256, 64, 2, 2.f});
      FAIL() << "configure accepted a 160-point grid for the custom FFT";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("160"), std::string::npos) << e.what();
    }
  }
}

TEST(CustomFft, FusedAndUnfusedChainsMatchTheCpuChain) {
  RADSTREAM_REQUIRE_GPU();
  for (int matrix : {64, 128, 256}) {
    SimParams s;
    s.matrix = matrix;
    s.coils = matrix == 256 ? 32 : 5;
    s.snr = 40;
    const Simulator sim(s);
    const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, matrix));
    auto p = params();
    ReconChain cpu(p, Backend::Cpu, default_registry());
    cpu.configure(f.geometry);
    const auto ref = image_of(cpu, f);
    const auto ca = cpu.coil_images();
    const std::vector<cfloat> ref_coils(ca.data, ca.data + ca.size());
    p.fft.engine = FftEngine::Custom;
    for (bool fused : {true, false}) {
      p.fft.fused = fused;
      ReconChain gpu(p, Backend::Cuda, default_registry());
      gpu.configure(f.geometry);
      const double e = rel_error(image_of(gpu, f), ref);
      std::printf("matrix %d, %d coils, custom FFT %s: CUDA vs CPU chain %.3g\n", matrix, s.coils,
                  fused ? "fused" : "unfused", e);
      EXPECT_LE(e, 1e-5);
      EXPECT_EQ(gpu.keeps_coil_images(), !fused);
      if (fused) {
        EXPECT_EQ(gpu.stage_names(), (std::vector<std::string>{"density_gridding", "fft_deapodize_combine"}));
        EXPECT_THROW(gpu.coil_images(), InputError);
      } else {
        const auto cb = gpu.coil_images();
        EXPECT_LE(rel_error(std::vector<cfloat>(cb.data, cb.data + cb.size()), ref_coils), 1e-5);
      }
    }
  }
}

TEST(CudaGraph, ReplayEqualsDirectLaunchesFrameAfterFrame) {
  RADSTREAM_REQUIRE_GPU();
  SimParams s;
  s.matrix = 128;
  s.coils = 8;
  s.snr = 20;
  s.motion = true;
  const Simulator sim(s);
  for (const char* engine : {"cufft", "custom"}) {
    auto p = params();
    p.fft.engine = parse_fft_engine(engine);
    p.density.method = DcfMethod::Voronoi;
    p.cuda_graph = true;
    ReconChain graph(p, Backend::Cuda, default_registry());
    p.cuda_graph = false;
    ReconChain direct(p, Backend::Cuda, default_registry());
    const Frame first = frame_from_spokes(sim.header(), sim.spokes(0, 64));
    graph.configure(first.geometry);
    direct.configure(first.geometry);
    // New spokes (angles and data) every frame: the graph must read the new upload each time.
    for (int k = 0; k < 4; ++k) {
      const Frame f = frame_from_spokes(sim.header(), sim.spokes(k * 16, 64));
      const auto a = image_of(graph, f), b = image_of(direct, f);
      const double e = rel_error(a, b);
      std::printf("%s frame %d: graph replay vs direct %.3g\n", engine, k, e);
      EXPECT_LE(e, 1e-6);
      EXPECT_TRUE(graph.uses_graph());
      EXPECT_FALSE(direct.uses_graph());
      for (const auto& t : graph.timings()) EXPECT_GT(t.ms, 0.0) << t.stage;
    }
  }
}

// New coil maps change a CG-SENSE solver's lambda (it scales with their peak power), a kernel argument of the
// captured graph: the graph is captured again and updated in place, and its frames equal the direct
// launches' with the new maps, not the old.
TEST(CudaGraph, NewCoilMapsUpdateTheCapturedSolverAsDirectLaunchesSeeThem) {
  RADSTREAM_REQUIRE_GPU();
  SimParams s;
  s.matrix = 64;
  s.coils = 4;
  s.snr = 30;
  const Simulator sim(s);
  auto p = params();
  p.method = ReconMethod::CgSense;
  p.cg.iterations = 6;
  p.cuda_graph = true;
  ReconChain graph(p, Backend::Cuda, default_registry());
  p.cuda_graph = false;
  ReconChain direct(p, Backend::Cuda, default_registry());
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 64));
  graph.configure(f.geometry);
  direct.configure(f.geometry);
  HostBuffer<cfloat> maps = estimate_coil_maps(f.data.view(), f.traj.view(), s.matrix);
  std::vector<cfloat> before;
  for (const float scale : {1.f, 3.f}) {  // 3x the maps: 9x the peak, 9x lambda
    std::vector<cfloat> m(maps.begin(), maps.end());
    for (auto& v : m) v *= scale;
    const View<const cfloat> mv{m.data(), maps.extents()};
    graph.take_coil_maps(mv);
    direct.take_coil_maps(mv);
    const auto a = image_of(graph, f), b = image_of(direct, f);
    const double e = rel_error(a, b);
    std::printf("maps x%.0f: graph vs direct %.3g\n", scale, e);
    EXPECT_LE(e, 1e-5) << scale;
    EXPECT_TRUE(graph.uses_graph());
    if (scale == 1.f) {
      before.assign(a.begin(), a.end());
    } else {
      EXPECT_GT(rel_error(a, before), 1e-3);  // the new maps made another image
    }
  }
}
