// NLINV's CUDA twin against the CPU twin on the same frame: the gridded data y and the transfer function D,
// F, DG and DG^H at the same point, the Jacobian's adjoint test on the device, and whole NLINV frames (a
// stream of three, so the warm start and the temporal damping are compared too).
#include <gtest/gtest.h>

#include <chrono>
#include <numbers>
#include <random>
#include <vector>

#include "gpu/handles.hpp"
#include "gpu_test_util.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/vector_ops.hpp"
#include "nlinv/coil_compression.hpp"
#include "nlinv/coil_compressor.hpp"
#include "nlinv/nlinv_cpu.hpp"
#include "nlinv/nlinv_cuda.hpp"
#ifdef RADSTREAM_HAVE_CUDA
#include "nlinv/nlinv_model_cuda.hpp"
#endif

using namespace radstream;
using namespace radstream::gputest;

namespace {

constexpr int kN = 48, kCoils = 4, kSpokes = 13, kSamples = 96;

std::vector<float> radial(int turn) {
  std::vector<float> t(std::size_t(kSpokes) * kSamples * 2);
  for (int s = 0; s < kSpokes; ++s)
    spoke_coordinates(std::numbers::pi * (s + turn / 3.0) / kSpokes, kSamples,
                      std::span<float>(t.data() + std::size_t(s) * kSamples * 2, std::size_t(kSamples) * 2));
  return t;
}

std::vector<cfloat> rnd(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<cfloat> v(n);
  for (auto& x : v) x = {d(rng), d(rng)};
  return v;
}

// The analytic phantom's simulator at the tests' size, and its k-space at a trajectory's points
// [coils][points].
Simulator phantom_simulator() {
  SimParams sp;
  sp.matrix = kN;
  sp.coils = kCoils;
  return Simulator(sp);
}
std::vector<cfloat> phantom_samples(const Simulator& sim, const std::vector<Ellipse>& phantom,
                                    const std::vector<float>& traj) {
  const std::size_t points = traj.size() / 2;
  std::vector<cfloat> samples(points * kCoils);
  for (int c = 0; c < kCoils; ++c)
    for (std::size_t i = 0; i < points; ++i)
      samples[std::size_t(c) * points + i] = cfloat(sim.kspace(phantom, c, traj[2 * i], traj[2 * i + 1]));
  return samples;
}

template <class T>
std::vector<T> down(const T* d, std::size_t n, gpu::StreamRef s) {
  std::vector<T> v(n);
  gpu::copy_to_host(v.data(), d, n * sizeof(T), s);
  gpu::synchronize(s);
  return v;
}

}  // namespace

TEST(NlinvCuda, TheModelMatchesTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  const NlinvParams p;
  const std::size_t points = std::size_t(kSpokes) * kSamples;
  NlinvCpu cpu(kN, kCoils, points, p, 0);
  auto gpu_engine = make_nlinv_cuda_engine(kN, kCoils, points, p, stream.get());
  const auto traj = radial(0);
  const auto samples = rnd(points * kCoils, 3);
  const auto d_traj = upload(traj, stream.get());
  const auto d_samples = upload(samples, stream.get());
  cpu.grid_frame(traj.data(), samples.data());
  gpu_engine->grid_frame(d_traj.data(), d_samples.data());
  NlinvModel& mc = cpu.model();
  NlinvModel& mg = gpu_engine->model();
  const std::size_t px = mc.pixels(), m = mc.data_size(), n = mc.unknowns();
  std::vector<cfloat> y_cpu(cpu.gridded(), cpu.gridded() + m);
  EXPECT_LT(rel_error(down(gpu_engine->gridded(), m, stream.get()), y_cpu), 1e-5) << "gridded data";
  std::vector<cfloat> d_cpu(mc.pattern(), mc.pattern() + px);
  EXPECT_LT(rel_error(down(mg.pattern(), px, stream.get()), d_cpu), 1e-5) << "transfer function";

  const auto x = rnd(n, 5), v = rnd(n, 6), r = rnd(m, 7);
  const auto d_x = upload(x, stream.get()), d_v = upload(v, stream.get()), d_r = upload(r, stream.get());
  DeviceBuffer<cfloat> d_out(Extents{n});
  std::vector<cfloat> out(n);
  mc.linearize(x.data());
  mg.linearize(d_x.data());
  mc.value(out.data());
  mg.value(d_out.data());
  EXPECT_LT(rel_error(down(d_out.data(), m, stream.get()), std::vector<cfloat>(out.begin(), out.begin() + m)),
            1e-5)
      << "F";
  mc.derivative(v.data(), out.data());
  mg.derivative(d_v.data(), d_out.data());
  EXPECT_LT(rel_error(down(d_out.data(), m, stream.get()), std::vector<cfloat>(out.begin(), out.begin() + m)),
            1e-5)
      << "DG";
  mc.derivative_adjoint(r.data(), out.data());
  mg.derivative_adjoint(d_r.data(), d_out.data());
  EXPECT_LT(rel_error(down(d_out.data(), n, stream.get()), out), 1e-5) << "DG^H";
  mc.normal(v.data(), out.data());
  mg.normal(d_v.data(), d_out.data());
  EXPECT_LT(rel_error(down(d_out.data(), n, stream.get()), out), 1e-5) << "DG^H D DG";

  NlinvJacobian jac(mg);
  const auto adj = check_adjoint(jac, 9);
  EXPECT_LT(adj.relative_error, 1e-5) << adj.lhs << " vs " << adj.rhs;
}

static void stream_of_frames_matches(int cg_max) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  NlinvParams p;
  p.newton = 6;
  p.newton_cg_max = cg_max;
  const std::size_t points = std::size_t(kSpokes) * kSamples;
  NlinvCpu cpu(kN, kCoils, points, p, 0);
  auto gpu_engine = make_nlinv_cuda_engine(kN, kCoils, points, p, stream.get());
  // Three frames of the analytic phantom on rotating turns of the same spokes.
  const Simulator sim = phantom_simulator();
  const auto phantom = sim.ellipses_at(0);
  DeviceBuffer<cfloat> d_out(Extents{std::size_t(kN) * kN});
  for (int f = 0; f < 3; ++f) {
    const auto traj = radial(f);
    const auto samples = phantom_samples(sim, phantom, traj);
    std::vector<cfloat> img_cpu(std::size_t(kN) * kN);
    const auto rc = cpu.reconstruct(traj.data(), samples.data(), img_cpu.data());
    const auto d_traj = upload(traj, stream.get());
    const auto d_samples = upload(samples, stream.get());
    const auto rg = gpu_engine->reconstruct(d_traj.data(), d_samples.data(), d_out.data());
    const double e = rel_error(down(d_out.data(), d_out.size(), stream.get()), img_cpu);
    std::printf("nlinv frame %d: cpu %d CG iterations, cuda %d; cuda vs cpu %.3g\n", f,
                rc.irgnm.cg_iterations, rg.irgnm.cg_iterations, e);
    if (cg_max == 2) {
      EXPECT_EQ(rc.irgnm.cg_iterations, rg.irgnm.cg_iterations) << "frame " << f;
      EXPECT_LT(e, 1e-4) << "frame " << f;
    } else {
      EXPECT_LE(std::abs(rc.irgnm.cg_iterations - rg.irgnm.cg_iterations), 1 + rc.irgnm.cg_iterations / 10);
      EXPECT_LT(e, 1e-2) << "frame " << f;
    }
  }
}

// Both backends run the same Newton steps; with CG stopped by its tolerance, one more iteration on one side
// (float sums in another order) moves the image by up to ~1e-2, so the exact parity is asserted with a fixed
// count of CG iterations per Newton step (both sides do the same arithmetic), the default run within 1e-2
// and with CG iteration counts within 10 %.
TEST(NlinvCuda, AStreamOfFramesMatchesTheCpuTwin) {
  for (int cg_max : {2, 100}) {
    SCOPED_TRACE("newton_cg_max " + std::to_string(cg_max));
    stream_of_frames_matches(cg_max);
  }
}

// Without a deadline a GPU frame runs as one graph whose CGs stop themselves on the device (a conditional
// while loop per Newton step; iter/irgnm.hpp): the same kernels in the same order as the host-stepped solve.
// On one gridded frame (the gridding's atomics make two griddings differ in the last bits, which the Newton
// steps amplify), from the same start, the two give the same iterate bit for bit and the same iteration
// counts, with the CG stopped by BART's rule (cg_max 100) and by its iteration limit (cg_max 2), from no
// reference and from a reference (the temporal damping's term).
TEST(NlinvCuda, AFrameAsOneGraphOfDeviceLoopsEqualsTheHostSteppedSolve) {
  RADSTREAM_REQUIRE_GPU();
  const std::size_t points = std::size_t(kSpokes) * kSamples;
  const Simulator sim = phantom_simulator();
  const auto traj = radial(0);
  const auto samples = phantom_samples(sim, sim.ellipses_at(0), traj);
  for (int cg_max : {100, 2}) {
    SCOPED_TRACE("newton_cg_max " + std::to_string(cg_max));
    gpu::Stream stream;
    NlinvParams p;
    p.newton = 6;
    p.newton_cg_max = cg_max;
    auto engine = make_nlinv_cuda_engine(kN, kCoils, points, p, stream.get());
    const auto d_traj = upload(traj, stream.get());
    const auto d_samples = upload(samples, stream.get());
    engine->grid_frame(d_traj.data(), d_samples.data());
    NlinvModel& model = engine->model();
    const std::size_t n = model.unknowns(), m = model.data_size();
    // y scaled to norm 100, as a stream's frames are (nlinv/nlinv_solver.cpp)
    const auto y0 = down(engine->gridded(), m, stream.get());
    double yy = 0;
    for (const auto& v : y0) yy += std::norm(v);
    std::vector<cfloat> y_host(m);
    for (std::size_t i = 0; i < m; ++i) y_host[i] = y0[i] * float(100.0 / std::sqrt(yy));
    const auto y = upload(y_host, stream.get());
    std::vector<cfloat> start(n, cfloat{0.f, 0.f});
    std::fill_n(start.begin(), model.pixels(), cfloat{1.f, 0.f});  // rho = 1, c = 0
    DeviceBuffer<cfloat> ref(Extents{n});
    for (bool with_ref : {false, true}) {
      SCOPED_TRACE(with_ref ? "with a reference" : "no reference");
      std::vector<cfloat> result[2];
      IrgnmReport rep[2];
      for (int looped = 0; looped < 2; ++looped) {
        engine->irgnm().set_device_loops(looped == 1);
        auto x = upload(start, stream.get());
        const auto t0 = std::chrono::steady_clock::now();
        rep[looped] =
            engine->irgnm().solve(irgnm_params(p), x.data(), with_ref ? ref.data() : nullptr, y.data());
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        result[looped] = down(x.data(), n, stream.get());
        std::printf("%s: %d CG iterations, residual %.6g, %.3f ms\n",
                    looped ? "device loops" : "host-stepped", rep[looped].cg_iterations,
                    rep[looped].final_residual, ms);
      }
      EXPECT_EQ(rep[0].cg_iterations, rep[1].cg_iterations);
      EXPECT_EQ(rep[0].newton_steps, rep[1].newton_steps);
      EXPECT_EQ(rep[0].final_residual, rep[1].final_residual);
      EXPECT_EQ(result[0], result[1]);
      if (cg_max == 2) {
        EXPECT_LE(rep[1].cg_iterations, 2 * 6);
      }
      // the next pass's reference: 0.9 x this solution
      std::vector<cfloat> r(result[0]);
      for (auto& v : r) v *= 0.9f;
      gpu::copy_to_device(ref.data(), r.data(), n * sizeof(cfloat), stream.get());
      gpu::synchronize(stream.get());
    }
  }
}

// Under a deadline the frame's graph checks the clock on the device before every further CG iteration and
// Newton step (DeviceDeadline): a frame of the phantom stream whose full solve takes longer than its
// deadline stops in time, with the budget the deadline stepper hands over (the output and the reserve taken
// off). Over 30 frames with a deadline of about 60% of the full solve, every frame ends within the deadline
// plus 0.3 ms (the host's jitter; on a quiet GPU the overrun is a few microseconds) or, when its time was
// spent before the solve began, does the least a frame can, most stop early, and the images stay finite.
TEST(NlinvCuda, UnderADeadlineTheDeviceLoopsEndTheFrameInTime) {
  RADSTREAM_REQUIRE_GPU();
  const std::size_t points = std::size_t(kSpokes) * kSamples;
  const Simulator sim = phantom_simulator();
  gpu::Stream stream;
  NlinvParams free_p;
  free_p.newton = 6;
  auto unlimited = make_nlinv_cuda_engine(kN, kCoils, points, free_p, stream.get());
  DeviceBuffer<cfloat> d_out(Extents{std::size_t(kN) * kN});
  std::vector<std::vector<float>> trajs;
  std::vector<std::vector<cfloat>> frames;
  double full_ms = 0;
  for (int f = 0; f < 30; ++f) {
    trajs.push_back(radial(f));
    frames.push_back(phantom_samples(sim, sim.ellipses_at(f * 0.05), trajs.back()));
    const auto d_traj = upload(trajs.back(), stream.get());
    const auto d_samples = upload(frames.back(), stream.get());
    const auto r = unlimited->reconstruct(d_traj.data(), d_samples.data(), d_out.data());
    if (f > 0) full_ms = std::max(full_ms, r.ms);
  }
  NlinvParams p = free_p;
  p.deadline_ms = 0.6 * full_ms;
  auto engine = make_nlinv_cuda_engine(kN, kCoils, points, p, stream.get());
  int early = 0, over = 0;
  double worst = -1e9;
  for (int f = 0; f < 30; ++f) {
    const auto d_traj = upload(trajs[std::size_t(f)], stream.get());
    const auto d_samples = upload(frames[std::size_t(f)], stream.get());
    const auto r = engine->reconstruct(d_traj.data(), d_samples.data(), d_out.data());
    early += r.irgnm.stopped_early;
    over += r.ms > p.deadline_ms;
    worst = std::max(worst, r.ms - p.deadline_ms);
    std::printf("frame %2d: %.3f ms, %d Newton steps, %d CG iterations%s, reserve %.3f ms\n", f, r.ms,
                r.irgnm.newton_steps, r.irgnm.cg_iterations, r.irgnm.stopped_early ? " (stopped early)" : "",
                r.irgnm.deadline_reserve_ms);
    // (a frame whose time was gone before its solve began, as the stream's first may be, paying one-time
    // costs in its gridding, can only do the least: one Newton step of one CG iteration)
    const bool least = r.irgnm.stopped_early && r.irgnm.newton_steps == 1 && r.irgnm.cg_iterations == 1;
    EXPECT_TRUE(r.ms <= p.deadline_ms + 0.3 || least) << "frame " << f << ": " << r.ms << " ms";
    for (const auto& v : down(d_out.data(), d_out.size(), stream.get()))
      ASSERT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag())) << "frame " << f;
  }
  std::printf(
      "full solve up to %.3f ms; deadline %.3f ms: %d of 30 frames stopped early, %d past the deadline, the "
      "latest %.3f ms after it\n",
      full_ms, p.deadline_ms, early, over, worst);
  EXPECT_GE(early, 15);
}

// The coil covariance that coil compression is estimated from, summed on the device (the first frame of a
// stream pays for it inside its deadline), against the host's sum in double, for 32 coils x 13 spokes x 512
// samples (N2's frame), the compression made from it against the host path's, and the projection on the
// virtual coils (nlinv/coil_compressor.hpp) against its CPU twin.
#ifdef RADSTREAM_HAVE_CUDA
TEST(NlinvCuda, TheCoilCovarianceMatchesTheHostSum) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  constexpr int coils = 32, virtual_coils = 8;
  constexpr std::size_t points = 13 * 512;
  auto x = rnd(points * coils, 41);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] *= 1.f + float(i / points);  // coils of unequal energy
  const auto compressor = make_coil_compressor_cuda(stream.get());
  const auto d_x = upload(x, stream.get());
  const auto gpu_cov = compressor->covariance(d_x.data(), coils, points);
  const auto cpu_cov = coil_covariance(x.data(), coils, points);
  ASSERT_EQ(gpu_cov.size(), cpu_cov.size());
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < cpu_cov.size(); ++i) {
    diff += std::norm(gpu_cov[i] - cpu_cov[i]);
    norm += std::norm(cpu_cov[i]);
  }
  std::printf("covariance CUDA vs host: %.2e relative\n", std::sqrt(diff / norm));
  EXPECT_LT(std::sqrt(diff / norm), 1e-12);
  const auto a = compression_from_covariance(gpu_cov, coils, virtual_coils);
  const auto b = coil_compression(x.data(), coils, points, virtual_coils);
  EXPECT_NEAR(a.kept_energy, b.kept_energy, 1e-9);
  // The projection on the virtual coils, on the device and by the CPU twin, with the same matrix.
  const auto host = make_coil_compressor_cpu();
  compressor->set(b);
  host->set(b);
  DeviceBuffer<cfloat> d_y(Extents{points * virtual_coils});
  std::vector<cfloat> y(points * virtual_coils);
  compressor->compress(d_x.data(), d_y.data(), points);
  host->compress(x.data(), y.data(), points);
  const auto gy = download(d_y, stream.get());
  double dy = 0, ny = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    dy += std::norm(std::complex<double>(gy[i]) - std::complex<double>(y[i]));
    ny += std::norm(std::complex<double>(y[i]));
  }
  std::printf("compression CUDA vs host: %.2e relative\n", std::sqrt(dy / ny));
  EXPECT_LT(std::sqrt(dy / ny), 1e-6);
}
#endif

// The model's work on the custom FFT engine (nlinv_fused_cuda.hpp): the linearization's coil images, the
// gradient (r = y - F(x), DG^H r) and the normal operator against the CPU twin's and cuFFT's path at random
// points, on grids the engine takes: the mask a quarter of the grid (N1's 256 in 512 with 8 virtual coils
// and with 9, one coil past a block's eight), a mask off that ratio (40 in 64), and a coil count below one
// block's transforms (3).
#ifdef RADSTREAM_HAVE_CUDA
namespace {
// The relative error against the CPU twin's result and against cuFFT's path's, each asserted < 1e-5.
void expect_equal3(const char* what, const std::vector<cfloat>& got, const std::vector<cfloat>& cpu,
                   const std::vector<cfloat>& cufft) {
  const double e_cpu = rel_error(got, cpu), e_cufft = rel_error(got, cufft);
  std::printf("  %s: custom FFT vs CPU %.2e, vs cuFFT %.2e\n", what, e_cpu, e_cufft);
  EXPECT_LT(e_cpu, 1e-5) << what;
  EXPECT_LT(e_cufft, 1e-5) << what;
}
}  // namespace

TEST(NlinvCuda, TheModelOnTheCustomFftEqualsTheCpuTwinAndCufft) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  struct Shape {
    int matrix, grid, coils;
  };
  for (const Shape sh :
       {Shape{32, 64, 3}, Shape{40, 64, 4}, Shape{64, 128, 5}, Shape{256, 512, 8}, Shape{256, 512, 9}}) {
    SCOPED_TRACE(std::to_string(sh.matrix) + " in " + std::to_string(sh.grid) + ", " +
                 std::to_string(sh.coils) + " coils");
    std::printf("%d in %d, %d coils\n", sh.matrix, sh.grid, sh.coils);
    ASSERT_TRUE(NlinvFusedCuda::supports(sh.grid));
    NlinvParams p;
    NlinvModelCpu cpu(sh.matrix, sh.grid, sh.coils, p, 0);
    NlinvModelCuda fused(sh.matrix, sh.grid, sh.coils, p, stream.get());
    p.fused = false;
    NlinvModelCuda plain(sh.matrix, sh.grid, sh.coils, p, stream.get());
    const std::size_t px = cpu.pixels(), n = cpu.unknowns(), m = cpu.data_size();
    const auto pattern = rnd(px, 11), x = rnd(n, 12), v = rnd(n, 13), y = rnd(m, 14);
    std::copy(pattern.begin(), pattern.end(), cpu.pattern());
    for (NlinvModelCuda* mc : {&fused, &plain})
      gpu::copy_to_device(mc->pattern(), pattern.data(), px * sizeof(cfloat), stream.get());
    const auto d_x = upload(x, stream.get()), d_v = upload(v, stream.get()), d_y = upload(y, stream.get());
    cpu.linearize(x.data());
    fused.linearize(d_x.data());
    plain.linearize(d_x.data());
    const std::size_t maps = std::size_t(sh.coils) * sh.matrix * sh.matrix;
    std::vector<cfloat> want_maps(maps), want_r(m), want(n);
    DeviceBuffer<cfloat> d_maps(Extents{maps}), d_r(Extents{m}), d_fused(Extents{n}), d_plain(Extents{n});
    cpu.coil_maps(want_maps.data());
    fused.coil_maps(d_maps.data());
    const auto maps_fused = down(d_maps.data(), maps, stream.get());
    plain.coil_maps(d_maps.data());
    expect_equal3("coil images", maps_fused, want_maps, down(d_maps.data(), maps, stream.get()));

    cpu.gradient(y.data(), want_r.data(), want.data());
    fused.gradient(d_y.data(), d_r.data(), d_fused.data());
    const auto r_fused = down(d_r.data(), m, stream.get());
    plain.gradient(d_y.data(), d_r.data(), d_plain.data());
    expect_equal3("residual", r_fused, want_r, down(d_r.data(), m, stream.get()));
    expect_equal3("gradient", down(d_fused.data(), n, stream.get()), want,
                  down(d_plain.data(), n, stream.get()));

    cpu.normal(v.data(), want.data());
    // out is written whole: what it held before must not show
    make_vector_ops_cuda(stream.get())->fill(d_fused.data(), n, cfloat{7.f, -3.f});
    fused.normal(d_v.data(), d_fused.data());
    plain.normal(d_v.data(), d_plain.data());
    const auto got = down(d_fused.data(), n, stream.get());
    expect_equal3("normal", got, want, down(d_plain.data(), n, stream.get()));
    // and rho's part outside the mask is exactly zero, as the CPU twin's
    double outside = 0;
    const int lo = (sh.grid - sh.matrix) / 2;
    for (int yy = 0; yy < sh.grid; ++yy)
      for (int xx = 0; xx < sh.grid; ++xx)
        if (yy < lo || yy >= lo + sh.matrix || xx < lo || xx >= lo + sh.matrix)
          outside += std::abs(got[std::size_t(yy) * sh.grid + xx]);
    EXPECT_EQ(outside, 0.0);
  }
}
#endif
