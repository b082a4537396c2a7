// The CUDA SENSE operator and CG-SENSE against their CPU twins: the adjoint test on the GPU, forward,
// adjoint and the Toeplitz normal against the CPU operator, the Toeplitz normal against forward-then-adjoint
// on the GPU, and whole CG-SENSE frames through the chain (fixed count in a CUDA graph, warm started over
// several frames, and deadline mode); the sense coil combination.
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "gpu_test_util.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/volume_sense.hpp"
#ifdef RADSTREAM_HAVE_CUDA
#include "noncart/sense_operator_cuda.hpp"
#endif

using namespace radstream;
using gputest::rel_error;

namespace {

const NufftKernel kAccurate{6, 2.0, 4096};

[[maybe_unused]] std::vector<cfloat> smooth_maps(int N, int coils) {
  return test::smooth_coil_maps(N, coils);
}

[[maybe_unused]] std::vector<cfloat> random_vec(std::size_t n, unsigned seed) {
  return test::random_complex(n, seed);
}

using gputest::download;
using gputest::upload;

}  // namespace

#ifdef RADSTREAM_HAVE_CUDA

TEST(SenseCuda, AdjointTestAndParityWithTheCpuOperator) {
  RADSTREAM_REQUIRE_GPU();
  const int N = 48, coils = 5;
  const auto r = gputest::random_radial(N, 96, 40, 1, 3);
  const std::size_t n = r.traj.size() / 2, P = std::size_t(N) * N;
  const auto maps = smooth_maps(N, coils);
  std::vector<float> w(n);
  for (std::size_t j = 0; j < n; ++j) w[j] = std::hypot(r.traj[2 * j], r.traj[2 * j + 1]) + 0.01f;
  gpu::Stream stream;
  const auto s = stream.get();
  auto d_maps = upload(maps, s);
  auto d_traj = upload(r.traj, s);
  auto d_w = upload(w, s);
  const auto x = random_vec(P, 5), y = random_vec(coils * n, 6);
  auto d_x = upload(x, s);
  auto d_y = upload(y, s);
  // The frame path's spread (atomics) and the coil split's deterministic one
  // (NufftPlanCuda::set_deterministic).
  for (int mode = 0; mode < 4; ++mode) {
    const bool weighted = mode & 1, det = mode >= 2;
    SenseOperatorCuda gpu_op(N, coils, n, kAccurate, true, s);
    gpu_op.set_deterministic(det);
    gpu_op.set_maps(d_maps.data());
    gpu_op.set_points(d_traj.data(), weighted ? d_w.data() : nullptr);
    const AdjointCheck a = check_adjoint(gpu_op, 9);
    SenseOperatorCpu cpu_op(N, coils, n, kAccurate, true);
    cpu_op.set_maps(maps.data());
    cpu_op.set_points(r.traj.data(), weighted ? w.data() : nullptr);
    std::vector<cfloat> fy(coils * n), ax(P), nx(P), dx(P);
    cpu_op.forward(x.data(), fy.data());
    cpu_op.adjoint(y.data(), ax.data());
    cpu_op.normal(x.data(), nx.data());
    DeviceBuffer<cfloat> d_fy(Extents{coils * n}), d_ax(Extents{P}), d_nx(Extents{P}), d_dx(Extents{P});
    gpu_op.forward(d_x.data(), d_fy.data());
    gpu_op.adjoint(d_y.data(), d_ax.data());
    gpu_op.normal(d_x.data(), d_nx.data());
    gpu_op.normal_direct(d_x.data(), d_dx.data());
    const double ef = rel_error(download(d_fy, s), fy), ea = rel_error(download(d_ax, s), ax);
    const double en = rel_error(download(d_nx, s), nx), et = rel_error(download(d_nx, s), download(d_dx, s));
    std::printf(
        "sense cuda (weighted %d, deterministic %d): adjoint test %.3g; vs cpu: forward %.3g adjoint %.3g "
        "toeplitz normal %.3g; toeplitz vs forward-adjoint on the GPU %.3g; weight sum %.1f vs %.1f\n",
        int(weighted), int(det), a.relative_error, ef, ea, en, et, gpu_op.weight_sum(), cpu_op.weight_sum());
    EXPECT_LT(a.relative_error, 1e-5);
    EXPECT_LT(ef, 1e-4);
    EXPECT_LT(ea, 1e-4);
    EXPECT_LT(en, 1e-4);
    EXPECT_LT(et, 1e-4);
    EXPECT_NEAR(gpu_op.weight_sum(), cpu_op.weight_sum(), 1e-4 * cpu_op.weight_sum());
  }
}

// The Toeplitz normal on the custom FFT engine (ToeplitzFftCuda: every power-of-two size it takes, coil
// counts that do and do not fill its blocks) against the cuFFT path, the CPU twin (float and the coil
// split's double sums) and its own adjoint: <N x, y> = <x, N y>.
TEST(SenseCuda, TheCustomToeplitzFftMatchesCufftAndTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  const auto s = stream.get();
  for (const auto& [N, coils] : {std::pair{32, 2}, {64, 3}, {128, 12}, {256, 32}, {512, 4}}) {
    const auto r = gputest::random_radial(N, 2 * N, N / 2, 1, 3);
    const std::size_t n = r.traj.size() / 2, P = std::size_t(N) * N;
    const auto maps = smooth_maps(N, coils);
    std::vector<float> w(n);
    for (std::size_t j = 0; j < n; ++j) w[j] = std::hypot(r.traj[2 * j], r.traj[2 * j + 1]) + 0.01f;
    auto d_maps = upload(maps, s);
    auto d_traj = upload(r.traj, s);
    auto d_w = upload(w, s);
    const auto x = random_vec(P, 11), y = random_vec(P, 12);
    auto d_x = upload(x, s);
    auto d_y = upload(y, s);
    SenseOperatorCuda op(N, coils, n, kAccurate, true, s);
    ASSERT_TRUE(op.custom_toeplitz()) << N;
    op.set_maps(d_maps.data());
    op.set_points(d_traj.data(), d_w.data());
    DeviceBuffer<cfloat> d_nx(Extents{P}), d_ny(Extents{P}), d_ref(Extents{P}), d_dx(Extents{P});
    DeviceBuffer<std::complex<double>> d_sum(Extents{P}), d_sum_ref(Extents{P});
    op.normal(d_x.data(), d_nx.data());
    op.normal_direct(d_x.data(), d_dx.data());  // forward then adjoint: no PSF, no Toeplitz embedding
    op.normal(d_y.data(), d_ny.data());
    op.normal_sum(d_x.data(), d_sum.data());
    op.set_cufft_toeplitz(true);
    EXPECT_FALSE(op.custom_toeplitz());
    op.normal(d_x.data(), d_ref.data());
    op.normal_sum(d_x.data(), d_sum_ref.data());
    const auto nx = download(d_nx, s), ny = download(d_ny, s), ref = download(d_ref, s);
    const auto sum = download(d_sum, s), sum_ref = download(d_sum_ref, s);
    SenseOperatorCpu cpu_op(N, coils, n, kAccurate, true);
    cpu_op.set_maps(maps.data());
    cpu_op.set_points(r.traj.data(), w.data());
    std::vector<cfloat> cpu(P);
    std::vector<std::complex<double>> cpu_sum(P);
    cpu_op.normal(x.data(), cpu.data());
    cpu_op.normal_sum(x.data(), cpu_sum.data());
    std::complex<double> nxy = 0, xny = 0;
    double sum_err = 0, sum_ref_err = 0, sum_norm = 0;
    for (std::size_t p = 0; p < P; ++p) {
      nxy += std::conj(std::complex<double>(nx[p])) * std::complex<double>(y[p]);
      xny += std::conj(std::complex<double>(x[p])) * std::complex<double>(ny[p]);
      sum_err += std::norm(sum[p] - cpu_sum[p]);
      sum_ref_err += std::norm(sum[p] - sum_ref[p]);
      sum_norm += std::norm(cpu_sum[p]);
    }
    const double e_cufft = rel_error(nx, ref), e_cpu = rel_error(nx, cpu),
                 e_direct = rel_error(nx, download(d_dx, s));
    const double e_adj = std::abs(nxy - xny) / std::abs(nxy);
    const double e_sum = std::sqrt(sum_err / sum_norm), e_sum_ref = std::sqrt(sum_ref_err / sum_norm);
    std::printf(
        "custom toeplitz N %d, %d coils: vs cufft %.3g, vs cpu %.3g, vs forward-adjoint %.3g, adjoint %.3g; "
        "double sums vs cpu %.3g, vs cufft %.3g\n",
        N, coils, e_cufft, e_cpu, e_direct, e_adj, e_sum, e_sum_ref);
    EXPECT_LT(e_cufft, 2e-6) << N;
    EXPECT_LT(e_cpu, 1e-5) << N;
    EXPECT_LT(e_direct, 1e-4) << N;  // the bound of the cuFFT path's same check (AdjointTestAndParity...)
    EXPECT_LT(e_adj, 1e-5) << N;
    EXPECT_LT(e_sum, 1e-5) << N;
    EXPECT_LT(e_sum_ref, 2e-6) << N;
  }
}

TEST(SenseCuda, CgSenseFramesMatchTheCpuChainWithGraphWarmStartAndDeadline) {
  RADSTREAM_REQUIRE_GPU();
  SimParams sp;
  sp.matrix = 64;
  sp.coils = 6;
  sp.snr = 40;
  sp.motion = true;
  const Simulator sim(sp);
  const int window = 48, stride = 8, frames = 4;
  const auto spokes = sim.spokes(0, window + stride * (frames - 1));
  const Registry reg = default_registry();
  ReconParams p = gputest::params();
  p.method = ReconMethod::CgSense;
  p.cg.iterations = 12;
  ReconChain cpu(p, Backend::Cpu, reg), gpu_chain(p, Backend::Cuda, reg);
  const Frame first = frame_from_spokes(sim.header(), std::span(spokes).subspan(0, window));
  const HostBuffer<cfloat> maps = estimate_coil_maps(first.data.view(), first.traj.view(), sp.matrix);
  for (ReconChain* c : {&cpu, &gpu_chain}) {
    c->configure(first.geometry);
    c->set_coil_maps(maps.view());
  }
  // A whole frame from the same (zero) start, 6 iterations: the backends agree to 1e-4. Further on, CG in
  // float amplifies rounding: on the CPU alone a 1e-7 perturbation of the data moves the 12-iteration image
  // by 6e-5 and the 30-iteration one by 7e-4 (measured, docs/benchmarks.md), so FFTW-vs-cuFFT rounding (~2e-7
  // per operator application) gives 1e-4..6e-3 after 12 iterations on this undersampled 48-spoke window: held
  // to 1e-2 there for warm-started sequences (each backend from its own previous frame), and to 2e-2 for
  // frames from zero: the spread's atomics add in a different order on every run, and frame 3 from zero, the
  // most sensitive, measured 7.7e-5 .. 1.01e-2 over 49 runs on H100s and H200s (the logs in
  // tests/bench/results).
  {
    ReconParams cold = p;
    cold.cg.warm_start = false;
    cold.cg.iterations = 6;
    const auto many = sim.spokes(0, 160);
    const Frame fr = frame_from_spokes(sim.header(), many);
    ReconChain c1(cold, Backend::Cpu, reg), c2(cold, Backend::Cuda, reg);
    for (ReconChain* c : {&c1, &c2}) {
      c->configure(fr.geometry);
      c->set_coil_maps(maps.view());
    }
    const auto a = c1.reconstruct(fr);
    const std::vector<cfloat> ref(a.data, a.data + a.size());
    const auto b = c2.reconstruct(fr);
    const double e = rel_error(std::vector<cfloat>(b.data, b.data + b.size()), ref);
    std::printf("cg-sense 160 spokes, 6 iterations from zero: cuda vs cpu %.3g (residual %.3g)\n", e,
                c1.solver_stats().residual);
    EXPECT_LE(e, 1e-4);
  }
  ReconParams cold = p;
  cold.cg.warm_start = false;
  ReconChain cpu_cold(cold, Backend::Cpu, reg), gpu_cold(cold, Backend::Cuda, reg);
  for (ReconChain* c : {&cpu_cold, &gpu_cold}) {
    c->configure(first.geometry);
    c->set_coil_maps(maps.view());
  }
  for (int f = 0; f < frames; ++f) {
    const Frame fr =
        frame_from_spokes(sim.header(), std::span(spokes).subspan(std::size_t(f) * stride, window));
    auto run = [&](ReconChain& c) {
      const auto v = c.reconstruct(fr);
      return std::vector<cfloat>(v.data, v.data + v.size());
    };
    const double e_cold = rel_error(run(gpu_cold), run(cpu_cold));
    const double e_warm = rel_error(run(gpu_chain), run(cpu));
    const SolverStats sc = cpu.solver_stats(), sg = gpu_chain.solver_stats();
    std::printf(
        "cg-sense frame %d: cuda vs cpu %.3g from zero, %.3g warm-started (graph %d); residual cpu %.3g "
        "cuda %.3g\n",
        f, e_cold, e_warm, int(gpu_chain.uses_graph()), sc.residual, sg.residual);
    EXPECT_LE(e_cold, 2e-2);
    EXPECT_LE(e_warm, 1e-2);
    EXPECT_TRUE(gpu_chain.uses_graph());
    EXPECT_EQ(sg.iterations, 12);
    EXPECT_NEAR(sg.residual, sc.residual, 1e-3 + 0.5 * sc.residual);
  }
  // Deadline mode: not captured, at least one iteration, at most the cap, and the time is reported.
  ReconParams d = p;
  d.cg.deadline_ms = 1000;
  d.cg.iterations = 5;
  ReconChain dl(d, Backend::Cuda, reg);
  dl.configure(first.geometry);
  dl.set_coil_maps(maps.view());
  dl.reconstruct(first);
  const SolverStats s = dl.solver_stats();
  std::printf("deadline 1000 ms: %d iterations in %.2f ms, residual %.3g\n", s.iterations, s.ms, s.residual);
  EXPECT_FALSE(dl.uses_graph());
  EXPECT_EQ(s.iterations, 5);
  EXPECT_GT(s.ms, 0.0);
}

// A SENSE operator of several images sharing the trajectory (a stack of stars' z positions as one) against
// its CPU twin, on both Toeplitz paths (the custom FFT engine at N = 32 and 64, cuFFT at 48), with its
// adjoint test; then the volume CG-SENSE (10 iterations, fixed count) against the CPU's volume solve.
TEST(SenseCuda, AnOperatorOfSeveralImagesAndTheVolumeSolveMatchTheCpuTwins) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  const auto s = stream.get();
  for (const auto& [N, coils, P] : {std::tuple{32, 3, 5}, {48, 4, 3}, {64, 2, 6}}) {
    const auto r = gputest::random_radial(N, 2 * N, N / 2, 1, 3);
    const std::size_t n = r.traj.size() / 2, pixels = std::size_t(N) * N, V = std::size_t(P) * pixels;
    std::vector<cfloat> maps;
    for (int z = 0; z < P; ++z) {
      auto m = smooth_maps(N, coils);
      for (auto& v : m) v *= std::polar(1.f, 0.9f * float(z));
      maps.insert(maps.end(), m.begin(), m.end());
    }
    const auto x = random_vec(V, 21), y = random_vec(std::size_t(P) * coils * n, 22);
    auto d_maps = upload(maps, s);
    auto d_traj = upload(r.traj, s);
    auto d_x = upload(x, s);
    auto d_y = upload(y, s);
    SenseOperatorCuda gpu_op(N, coils, n, kAccurate, true, s, P);
    gpu_op.set_maps(d_maps.data());
    gpu_op.set_points(d_traj.data());
    const AdjointCheck a = check_adjoint(gpu_op, 4);
    SenseOperatorCpu cpu_op(N, coils, n, kAccurate, true, 0, FftPlanner::Estimate, P);
    cpu_op.set_maps(maps.data());
    cpu_op.set_points(r.traj.data());
    std::vector<cfloat> fx(y.size()), ay(V), nx(V);
    cpu_op.forward(x.data(), fx.data());
    cpu_op.adjoint(y.data(), ay.data());
    cpu_op.normal(x.data(), nx.data());
    DeviceBuffer<cfloat> d_fx(Extents{y.size()}), d_ay(Extents{V}), d_nx(Extents{V}), d_ref(Extents{V});
    gpu_op.forward(d_x.data(), d_fx.data());
    gpu_op.adjoint(d_y.data(), d_ay.data());
    gpu_op.normal(d_x.data(), d_nx.data());
    const bool custom = gpu_op.custom_toeplitz();
    gpu_op.set_cufft_toeplitz(true);
    gpu_op.normal(d_x.data(), d_ref.data());
    const double ef = rel_error(download(d_fx, s), fx), ea = rel_error(download(d_ay, s), ay),
                 en = rel_error(download(d_nx, s), nx), ec = rel_error(download(d_nx, s), download(d_ref, s));
    // The volume solves, GPU and CPU, from the same data: the forward model of x (a consistent system, as
    // measured data are). The float CGs' rounding differs (the GPU's spread adds in any order) and grows
    // over the iterations of this undersampled problem (N/2 spokes): 1.3e-3 to 6.1e-3 over runs, so the
    // bound is the 2D chains' (CgSenseFramesMatchTheCpuChain... allows 2e-2); a block mixed up is O(1).
    auto d_fy = upload(fx, s);
    CgSenseParams p;
    p.iterations = 10;
    const VolumeSenseShape shape{N, P, coils, n};
    auto gpu_vol = make_volume_sense_cuda(shape, p, kAccurate, s);
    auto cpu_vol = make_volume_sense_cpu(shape, p, kAccurate, 0);
    gpu_vol->set_maps(d_maps.data(), 1.0);
    cpu_vol->set_maps(maps.data(), 1.0);
    DeviceBuffer<cfloat> d_vol(Extents{V});
    gpu_vol->solve(d_fy.data(), d_traj.data(), d_vol.data(), false);
    std::vector<cfloat> vol(V);
    cpu_vol->solve(fx.data(), r.traj.data(), vol.data(), false);
    const double ev = rel_error(download(d_vol, s), vol);
    std::printf(
        "sense of %d images, N %d, %d coils (%s toeplitz): adjoint test %.3g; vs cpu: forward %.3g adjoint "
        "%.3g normal %.3g; custom vs cufft %.3g; volume cg-sense (10 iterations) vs cpu %.3g (residual "
        "%.3g)\n",
        P, N, coils, custom ? "custom" : "cufft", a.relative_error, ef, ea, en, ec, ev, gpu_vol->residual());
    EXPECT_EQ(custom, N != 48);
    EXPECT_LT(a.relative_error, 1e-5);
    EXPECT_LT(ef, 1e-4);
    EXPECT_LT(ea, 1e-4);
    EXPECT_LT(en, 1e-4);
    EXPECT_LT(ec, 1e-4);
    EXPECT_LT(ev, 2e-2);
    EXPECT_LT(gpu_vol->residual(), 0.5);
  }
}

TEST(SenseCuda, SenseCoilCombinationMatchesTheCpu) {
  RADSTREAM_REQUIRE_GPU();
  SimParams sp;
  sp.matrix = 64;
  sp.coils = 4;
  const Simulator sim(sp);
  const Frame fr = frame_from_spokes(sim.header(), sim.spokes(0, 100));
  const Registry reg = default_registry();
  ReconParams p = gputest::params();
  p.combine.method = CoilCombineMethod::Sense;
  const HostBuffer<cfloat> maps = estimate_coil_maps(fr.data.view(), fr.traj.view(), sp.matrix);
  ReconChain cpu(p, Backend::Cpu, reg), gpu_chain(p, Backend::Cuda, reg);
  for (ReconChain* c : {&cpu, &gpu_chain}) {
    c->configure(fr.geometry);
    c->set_coil_maps(maps.view());
  }
  const auto a = cpu.reconstruct(fr);
  const std::vector<cfloat> ref(a.data, a.data + a.size());
  const auto b = gpu_chain.reconstruct(fr);
  const double e = rel_error(std::vector<cfloat>(b.data, b.data + b.size()), ref);
  std::printf("sense coil combination: cuda vs cpu %.3g\n", e);
  EXPECT_LE(e, 1e-4);
  // Keeping the phase (complex MRD images): the complex image of both twins, and the same magnitude.
  p.keep_phase = true;
  ReconChain cpu_c(p, Backend::Cpu, reg), gpu_c(p, Backend::Cuda, reg);
  for (ReconChain* c : {&cpu_c, &gpu_c}) {
    c->configure(fr.geometry);
    c->set_coil_maps(maps.view());
  }
  cpu_c.reconstruct(fr);
  const auto gi = gpu_c.reconstruct(fr);
  const double em = rel_error(std::vector<cfloat>(gi.data, gi.data + gi.size()), ref);
  const auto ca = cpu_c.complex_image();
  const auto cb = gpu_c.complex_image();
  const double ec = rel_error(std::vector<cfloat>(cb.data, cb.data + cb.size()),
                              std::vector<cfloat>(ca.data, ca.data + ca.size()));
  std::printf("sense combination keeping the phase: complex cuda vs cpu %.3g, magnitude %.3g\n", ec, em);
  EXPECT_LE(ec, 1e-4);
  EXPECT_LE(em, 1e-4);
}

#endif

#ifdef RADSTREAM_HAVE_CUDA
#include "linalg/finite_difference.hpp"
TEST(SenseCuda, FiniteDifferencesMatchTheCpuAndPassTheAdjointTest) {
  RADSTREAM_REQUIRE_GPU();
  const int N = 40;
  gpu::Stream stream;
  FiniteDifferenceCuda g(N, stream.get());
  FiniteDifferenceCpu c(N);
  const AdjointCheck a = check_adjoint(g, 4);
  const auto x = random_vec(std::size_t(N) * N, 8);
  std::vector<cfloat> y(2 * x.size());
  c.forward(x.data(), y.data());
  auto d_x = upload(x, stream.get());
  DeviceBuffer<cfloat> d_y(Extents{y.size()});
  g.forward(d_x.data(), d_y.data());
  const double e = rel_error(download(d_y, stream.get()), y);
  std::printf("finite differences cuda: adjoint test %.3g, vs cpu %.3g\n", a.relative_error, e);
  EXPECT_LT(a.relative_error, 1e-6);
  EXPECT_LT(e, 1e-6);
}
#endif
