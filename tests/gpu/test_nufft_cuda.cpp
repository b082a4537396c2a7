// The CUDA NUFFT plan and operator against their CPU twins and the exact NUDFT; the CUDA vector ops and CG
// against the CPU ones; a fixed-count CG captured in one CUDA graph.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "gpu_test_util.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "sim/nudft.hpp"
#ifdef RADSTREAM_HAVE_CUDA
#include "noncart/nufft_operator_cuda.hpp"
#endif

using namespace radstream;
using gputest::rel_error;

namespace {

[[maybe_unused]] std::vector<float> random_points(std::size_t n, unsigned seed) {
  return gputest::random_points(n, 2, seed);
}

[[maybe_unused]] std::vector<cfloat> random_values(std::size_t n, unsigned seed) {
  return test::random_complex(n, seed);
}

using gputest::download;
using gputest::upload;

using Stream = gputest::TestStream;

}  // namespace

#ifdef RADSTREAM_HAVE_CUDA

TEST(NufftCuda, InterpAndSpreadMatchTheCpuPlan) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  // 1 coil: a cell a thread (gather_tiles); 3 and more with widths 4..8: a coil a lane (gather_rows), in
  // groups of 4, 8 and 16 with idle lanes (3, 5, 12, 21) and, from 17 coils, two groups of 16 a block (21,
  // 32, 40: a second block of 8); width 9: gather_tiles again. The radial frame's centre tiles take several
  // chunks (cleared first, then added with atomics; a second spread into the same grids checks that nothing
  // of the first stays). The interp: a few lanes a point below 16 coils, by tiles through shared memory from
  // 16 (16, 21, 32, 40; W 4..8).
  for (int coils : {1, 3, 5, 8, 12, 16, 21, 32, 40}) {
    for (int width : {4, 5, 6, 7, 8, 9}) {
      // A golden-angle radial frame (the live path's points) and uniform random points.
      const auto radial = gputest::random_radial(64, 128, 48, coils, 5);
      for (const auto& traj : {radial.traj, random_points(128 * 48, 6)}) {
        const std::size_t n = traj.size() / 2;
        const NufftKernel k{width, 2.0, 1024};
        NufftPlanCpu cpu(2, {128, 128, 1}, k, n);
        cpu.set_points(traj.data(), n);
        const auto grids = random_values(std::size_t(coils) * cpu.grid_size(), 7);
        const auto samples = random_values(std::size_t(coils) * n, 8);
        std::vector<cfloat> y_cpu(samples.size()), g_cpu(grids.size());
        cpu.interp(grids.data(), y_cpu.data(), coils);
        cpu.spread(samples.data(), g_cpu.data(), coils);
        {
          NufftPlanCuda gpu(128, k, n, st.s);
          auto d_traj = upload(traj, st.s);
          auto d_grids = upload(grids, st.s);
          auto d_samples = upload(samples, st.s);
          DeviceBuffer<cfloat> d_y(Extents{samples.size()}), d_g(Extents{grids.size()});
          gpu.set_points(d_traj.data(), n);
          gpu.interp(d_grids.data(), d_y.data(), coils);
          gpu.spread(d_samples.data(), d_g.data(), coils);
          const auto y = download(d_y, st.s);
          const double ei = rel_error(y, y_cpu), es = rel_error(download(d_g, st.s), g_cpu);
          std::printf("coils %2d W%d: interp CUDA vs CPU %.2e, spread %.2e\n", coils, width, ei, es);
          EXPECT_LE(ei, 1e-5);
          EXPECT_LE(es, 1e-5);
          {  // again, other samples into the same grids: no cell keeps the last spread's value (the tiles
             // that several chunks add into are cleared again, every other cell is stored)
            const auto samples2 = random_values(std::size_t(coils) * n, 9);
            std::vector<cfloat> g2_cpu(grids.size());
            cpu.spread(samples2.data(), g2_cpu.data(), coils);
            auto d_samples2 = upload(samples2, st.s);
            gpu.spread(d_samples2.data(), d_g.data(), coils);
            const double e2 = rel_error(download(d_g, st.s), g2_cpu);
            EXPECT_LE(e2, 1e-5) << "second spread, coils " << coils << " W" << width;
          }
          if (width <= 8) {  // the same grids in 8 x 8 cell tiles (the custom forward head's layout)
            std::vector<cfloat> tiled(grids.size());
            const std::size_t G = 128, cells = G * G;
            for (std::size_t c = 0; c < std::size_t(coils); ++c)
              for (std::size_t y0 = 0; y0 < G; ++y0)
                for (std::size_t x0 = 0; x0 < G; ++x0)
                  tiled[c * cells + ((y0 / 8) * (G / 8) + x0 / 8) * 64 + (y0 % 8) * 8 + x0 % 8] =
                      grids[c * cells + y0 * G + x0];
            auto d_tiled = upload(tiled, st.s);
            gpu.interp(d_tiled.data(), d_y.data(), coils, true);
            EXPECT_EQ(download(d_y, st.s), y) << "tiled interp, coils " << coils << " W" << width;
          }
        }
      }
    }
  }
}

// Points with non-finite or absurd coordinates (a hostile stream's) are in no tile's list: the interpolation
// still writes their samples, zeros, for every coil, whichever kernel runs (a few lanes a point below 4
// coils, the tile kernel from 4), and the other points equal the CPU plan's.
TEST(NufftCuda, InterpWritesZerosForPointsWithNonFiniteCoordinates) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  for (int coils : {3, 8, 32}) {
    for (int width : {4, 6}) {
      auto traj = gputest::random_radial(64, 128, 48, coils, 11).traj;
      const std::size_t n = traj.size() / 2;
      const std::vector<std::size_t> bad{0, 77, 3000, n - 1};
      traj[2 * bad[0]] = std::numeric_limits<float>::quiet_NaN();
      traj[2 * bad[1] + 1] = std::numeric_limits<float>::infinity();
      traj[2 * bad[2]] = 3e7f;
      traj[2 * bad[3] + 1] = -std::numeric_limits<float>::infinity();
      const NufftKernel k{width, 2.0, 1024};
      NufftPlanCpu cpu(2, {128, 128, 1}, k, n);
      cpu.set_points(traj.data(), n);
      const auto grids = random_values(std::size_t(coils) * cpu.grid_size(), 12);
      std::vector<cfloat> y_cpu(std::size_t(coils) * n);
      cpu.interp(grids.data(), y_cpu.data(), coils);
      NufftPlanCuda gpu(128, k, n, st.s);
      auto d_traj = upload(traj, st.s);
      auto d_grids = upload(grids, st.s);
      DeviceBuffer<cfloat> d_y(Extents{y_cpu.size()});
      gpu::memset_device(d_y.data(), 0x7f, y_cpu.size() * sizeof(cfloat), st.s);  // not zeros
      gpu.set_points(d_traj.data(), n);
      gpu.interp(d_grids.data(), d_y.data(), coils);
      const auto y = download(d_y, st.s);
      for (int c = 0; c < coils; ++c)
        for (std::size_t j : bad) EXPECT_EQ(y[std::size_t(c) * n + j], cfloat(0.f, 0.f)) << c << " " << j;
      const double e = rel_error(y, y_cpu);
      std::printf("coils %2d W%d, 4 non-finite points: interp CUDA vs CPU %.2e\n", coils, width, e);
      EXPECT_LE(e, 1e-5);
    }
  }
}

// Grids of 1024 and 2048 cells (4096 and 16384 tiles): the tile count's last block scans in 4 and 16 rounds
// of 1024 tiles, and at 2048 its per-block tallies take 64 KiB of shared memory; spread and interp equal the
// CPU plan, on random points and on a radial frame. A small plan of another width is made after the large one
// and before its frames: a kernel's shared-memory limit is one per process, and the small plan must not lower
// it under the large plan's launches (the 1-coil spread runs the cell gather, whose need grows with W).
TEST(NufftCuda, LargeGridsMatchTheCpuPlan) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int coils = 2;
  const NufftKernel k{4, 2.0, 1024};
  for (int G : {1024, 2048}) {
    const auto radial = gputest::random_radial(G / 2, G, 64, coils, 31);
    for (const auto& traj : {radial.traj, random_points(40000, 32)}) {
      const std::size_t n = traj.size() / 2;
      NufftPlanCpu cpu(2, {G, G, 1}, k, n);
      ASSERT_EQ(int(cpu.grid_size()), G * G);
      cpu.set_points(traj.data(), n);
      const auto grids = random_values(std::size_t(coils) * cpu.grid_size(), 33);
      const auto samples = random_values(std::size_t(coils) * n, 34);
      std::vector<cfloat> y_cpu(samples.size()), g_cpu(grids.size());
      cpu.interp(grids.data(), y_cpu.data(), coils);
      cpu.spread(samples.data(), g_cpu.data(), coils);
      NufftPlanCuda gpu(G, k, n, st.s);
      const NufftPlanCuda small(64, NufftKernel{2, 2.0, 1024}, 100, st.s);
      std::vector<cfloat> g1_cpu(cpu.grid_size());
      cpu.spread(samples.data(), g1_cpu.data(), 1);
      auto d_traj = upload(traj, st.s);
      auto d_grids = upload(grids, st.s);
      auto d_samples = upload(samples, st.s);
      DeviceBuffer<cfloat> d_y(Extents{samples.size()}), d_g(Extents{grids.size()});
      for (int frame = 0; frame < 2;
           ++frame) {  // the tallies are zeroed for the next frame by the last block
        gpu.set_points(d_traj.data(), n);
        gpu.interp(d_grids.data(), d_y.data(), coils);
        gpu.spread(d_samples.data(), d_g.data(), coils);
        const double ei = rel_error(download(d_y, st.s), y_cpu), es = rel_error(download(d_g, st.s), g_cpu);
        gpu.spread(d_samples.data(), d_g.data(), 1);
        auto g1 = download(d_g, st.s);
        g1.resize(g1_cpu.size());
        const double e1 = rel_error(g1, g1_cpu);
        std::printf("G %d, %zu points, frame %d: interp CUDA vs CPU %.2e, spread %.2e, 1-coil spread %.2e\n",
                    G, n, frame, ei, es, e1);
        EXPECT_LE(ei, 1e-5);
        EXPECT_LE(es, 1e-5);
        EXPECT_LE(e1, 1e-5);
      }
    }
  }
}

// The deterministic spread (the coil split's): the same bits on every run, re-planned frames included, and
// the CPU plan's grid to 1e-5, on a radial frame whose centre tiles take many chunks (400 spokes of 256
// through a 512 grid) and on random points.
TEST(NufftCuda, DeterministicSpreadGivesTheSameBitsEveryRun) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const auto radial = gputest::random_radial(256, 256, 400, 4, 9);
  for (const int coils : {4, 12}) {  // one coil group and several (deterministic mode: gather_tiles)
    for (const auto& traj : {radial.traj, random_points(256 * 400, 10)}) {
      const std::size_t n = traj.size() / 2;
      const NufftKernel k{6, 2.0, 1024};
      NufftPlanCpu cpu(2, {512, 512, 1}, k, n);
      cpu.set_points(traj.data(), n);
      const auto samples = random_values(std::size_t(coils) * n, 11);
      std::vector<cfloat> g_cpu(std::size_t(coils) * cpu.grid_size());
      cpu.spread(samples.data(), g_cpu.data(), coils);
      NufftPlanCuda gpu(512, k, n, st.s);
      gpu.set_deterministic(true, coils);
      auto d_traj = upload(traj, st.s);
      auto d_samples = upload(samples, st.s);
      DeviceBuffer<cfloat> d_g(Extents{g_cpu.size()});
      std::vector<cfloat> first;
      for (int run = 0; run < 3; ++run) {
        gpu.set_points(d_traj.data(), n);
        gpu.spread(d_samples.data(), d_g.data(), coils);
        const auto g = download(d_g, st.s);
        if (run == 0) {
          first = g;
          EXPECT_LE(rel_error(g, g_cpu), 1e-5) << coils << " coils";
        } else {
          EXPECT_EQ(g, first) << coils << " coils, run " << run;
        }
      }
    }
  }
}

TEST(NufftCuda, OperatorMatchesExactNudftAndIsAdjoint) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int N = 32;
  const std::size_t n = 3000;
  const auto traj = random_points(n, 9);
  const auto img = random_values(std::size_t(N) * N, 10);
  for (int width : {4, 6}) {
    NufftOperatorCuda op(N, 1, n, {width, 2.0, 4096}, st.s);
    auto d_traj = upload(traj, st.s);
    op.set_points(d_traj.data());
    auto d_img = upload(img, st.s);
    DeviceBuffer<cfloat> d_y(Extents{n});
    op.forward(d_img.data(), d_y.data());
    const auto y = download(d_y, st.s);
    const auto ref = forward_nudft(traj, 2, img, {N, N, 1});
    double num = 0, den = 0;
    for (std::size_t j = 0; j < n; ++j) {
      num += std::norm(std::complex<double>(y[j]) - ref[j]);
      den += std::norm(ref[j]);
    }
    const double e = std::sqrt(num / den);
    const AdjointCheck c = check_adjoint(op, 4);
    std::printf("CUDA NUFFT W%d: forward vs exact %.2e, adjointness %.2e\n", width, e, c.relative_error);
    EXPECT_LE(e, width == 6 ? 1e-4 : 2e-3);
    EXPECT_LE(c.relative_error, 1e-5);
  }
}

TEST(NufftCuda, OperatorMatchesCpuTwinWithCoils) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int N = 64, coils = 8;
  const auto r = gputest::random_radial(N, 128, 64, coils, 11);
  const std::size_t n = r.traj.size() / 2;
  const auto img = random_values(std::size_t(coils) * N * N, 12);
  const NufftKernel k{4, 2.0, 1024};
  NufftOperatorCpu cpu(2, {N, N, 1}, coils, n, k);
  cpu.set_points(r.traj.data());
  std::vector<cfloat> y_cpu(coils * n), x_cpu(img.size());
  cpu.forward(img.data(), y_cpu.data());
  cpu.adjoint(r.in.data(), x_cpu.data());
  NufftOperatorCuda gpu(N, coils, n, k, st.s);
  auto d_traj = upload(r.traj, st.s);
  gpu.set_points(d_traj.data());
  auto d_img = upload(img, st.s);
  auto d_in = upload(r.in, st.s);
  DeviceBuffer<cfloat> d_y(Extents{coils * n}), d_x(Extents{img.size()});
  gpu.forward(d_img.data(), d_y.data());
  gpu.adjoint(d_in.data(), d_x.data());
  const double ef = rel_error(download(d_y, st.s), y_cpu), ea = rel_error(download(d_x, st.s), x_cpu);
  std::printf("CUDA vs CPU NUFFT operator, 8 coils: forward %.2e, adjoint %.2e\n", ef, ea);
  EXPECT_LE(ef, 1e-5);
  EXPECT_LE(ea, 1e-5);
}

// The 2D forward's head on the custom FFT engine (apodize + pad + FFT, skipping the padding) against the
// cuFFT path of the same operator, the CPU twin and the exact NUDFT in double; a grid the custom engine does
// not take (N 48: G 96) keeps the cuFFT path and still equals the CPU twin.
TEST(NufftCuda, TheCustomForwardHeadMatchesCufftTheCpuTwinAndTheExactNudft) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int coils = 3;
  const std::size_t n = 2500;
  const auto traj = random_points(n, 21);
  const NufftKernel k{6, 2.0, 4096};
  for (int N : {32, 128, 48}) {
    const auto img = random_values(std::size_t(coils) * N * N, 22 + N);
    NufftOperatorCpu cpu(2, {N, N, 1}, coils, n, k);
    cpu.set_points(traj.data());
    std::vector<cfloat> y_cpu(coils * n);
    cpu.forward(img.data(), y_cpu.data());
    NufftOperatorCuda gpu(N, coils, n, k, st.s);
    const bool custom = gpu.custom_forward();
    EXPECT_EQ(custom, N != 48) << "N " << N;
    auto d_traj = upload(traj, st.s);
    gpu.set_points(d_traj.data());
    auto d_img = upload(img, st.s);
    DeviceBuffer<cfloat> d_y(Extents{coils * n});
    gpu.forward(d_img.data(), d_y.data());
    const auto y_head = download(d_y, st.s);
    gpu.set_cufft_forward(true);
    gpu.forward(d_img.data(), d_y.data());
    const auto y_cufft = download(d_y, st.s);
    // The exact NUDFT of the last coil, in double.
    const std::vector<cfloat> last(img.end() - std::ptrdiff_t(N) * N, img.end());
    const auto ref = forward_nudft(traj, 2, last, {N, N, 1});
    double num = 0, den = 0;
    for (std::size_t j = 0; j < n; ++j) {
      num += std::norm(std::complex<double>(y_head[(coils - 1) * n + j]) - ref[j]);
      den += std::norm(ref[j]);
    }
    const double e_exact = std::sqrt(num / den), e_cufft = rel_error(y_head, y_cufft),
                 e_cpu = rel_error(y_head, y_cpu);
    std::printf("forward head N %d (G %d, %s): vs cuFFT path %.2e, vs CPU %.2e, vs exact %.2e\n", N, 2 * N,
                custom ? "custom" : "cuFFT", e_cufft, e_cpu, e_exact);
    EXPECT_LE(e_cufft, 1e-5);
    EXPECT_LE(e_cpu, 1e-5);
    EXPECT_LE(e_exact, 1e-4);
  }
}

// CG-NUFFT with Tikhonov on both backends; then the fixed-count solve captured in one CUDA graph and
// replayed.
TEST(NufftCuda, CgMatchesTheCpuSolverAndReplaysAsAGraph) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int N = 48;
  const auto r = gputest::random_radial(N, 96, 40, 1, 13);
  const std::size_t n = r.traj.size() / 2, un = std::size_t(N) * N;
  const NufftKernel k{6, 2.0, 4096};
  const CgOptions opt{.max_iterations = 15, .lambda = 20.0};

  NufftOperatorCpu cpu(2, {N, N, 1}, 1, n, k);
  cpu.set_points(r.traj.data());
  std::vector<cfloat> b(un), x_cpu(un);
  cpu.adjoint(r.in.data(), b.data());
  auto ops_cpu = make_vector_ops_cpu();
  ConjugateGradient cg_cpu(un, *ops_cpu);
  const CgReport rc = cg_cpu.solve(cpu, b.data(), x_cpu.data(), opt, false);

  NufftOperatorCuda gpu(N, 1, n, k, st.s);
  auto d_traj = upload(r.traj, st.s);
  gpu.set_points(d_traj.data());
  auto d_b = upload(b, st.s);
  DeviceBuffer<cfloat> d_x(Extents{un});
  auto ops = make_vector_ops_cuda(st.s);
  ConjugateGradient cg(un, *ops);
  const CgReport rg = cg.solve(gpu, d_b.data(), d_x.data(), opt, false);
  const auto x_gpu = download(d_x, st.s);
  const double e = rel_error(x_gpu, x_cpu);
  std::printf("CG 15 iterations: residual CPU %.3e GPU %.3e, solution CUDA vs CPU %.2e\n", rc.residual,
              rg.residual, e);
  EXPECT_EQ(rg.iterations, 15);
  EXPECT_NEAR(rg.residual, rc.residual, 1e-3 * rc.residual + 1e-6);
  EXPECT_LE(e, 1e-4);

  gpu::Graph::begin_capture(st.s);
  try {
    cg.enqueue(gpu, d_b.data(), d_x.data(), opt, false);
  } catch (...) {
    gpu::Graph::abort_capture(st.s);
    throw;
  }
  const gpu::Graph graph = gpu::Graph::end_capture(st.s);
  gpu::memset_device(d_x.data(), 0, un * sizeof(cfloat), st.s);
  graph.launch(st.s);
  const auto x_graph = download(d_x, st.s);
  const double eg = rel_error(x_graph, x_gpu);
  std::printf("CG replayed from a CUDA graph vs direct: %.2e (residual %.3e)\n", eg, cg.residual());
  EXPECT_LE(eg, 1e-4);  // the spread adds the k-space centre with atomics: runs differ at rounding level
}

// The fused vector passes on the GPU against the CPU twin: the same updates, the sums within rounding of
// the host's (another summation order), the limit a no-op, a posted slot fetched without waiting for later
// work.
TEST(NufftCuda, FusedVectorPassesMatchTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const std::size_t n = 300007;
  const auto x = random_values(n, 1), r = random_values(n, 2), p = random_values(n, 3),
             q = random_values(n, 4);
  auto cpu = make_vector_ops_cpu();
  auto gpu = make_vector_ops_cuda(st.s);
  auto dx = upload(x, st.s), dr = upload(r, st.s), dp = upload(p, st.s), dq = upload(q, st.s);
  std::vector<cfloat> hx = x, hr = r, hq = q;
  cpu->axpy_dot(hq.data(), 0.37f, p.data(), n, 0);
  gpu->axpy_dot(dq.data(), 0.37f, dp.data(), n, 0);
  cpu->dot_re(hr.data(), hr.data(), n, 1);
  gpu->dot_re(dr.data(), dr.data(), n, 1);
  cpu->cg_step_norm(hx.data(), hr.data(), p.data(), hq.data(), n, 1, 0, 2, -1.0);
  gpu->cg_step_norm(dx.data(), dr.data(), dp.data(), dq.data(), n, 1, 0, 2, -1.0);
  gpu->post(2, 3);
  const double posted = gpu->fetch(3);
  EXPECT_LE(rel_error(download(dq, st.s), hq), 1e-6);
  EXPECT_LE(rel_error(download(dx, st.s), hx), 1e-6);
  EXPECT_LE(rel_error(download(dr, st.s), hr), 1e-6);
  for (int slot : {0, 1, 2}) EXPECT_NEAR(gpu->read(slot), cpu->read(slot), 1e-9 * std::abs(cpu->read(slot)));
  EXPECT_EQ(posted, gpu->read(2));
  // at the limit: a no-op on both
  const auto x_before = download(dx, st.s);
  gpu->cg_step_norm(dx.data(), dr.data(), dp.data(), dq.data(), n, 2, 0, 3, gpu->read(2));
  EXPECT_EQ(download(dx, st.s), x_before);
  EXPECT_EQ(gpu->read(3), gpu->read(2));
  // The chores NLINV hands to the vector ops: fill, scale and the copy to the host.
  std::vector<cfloat> hf(n), back(n);
  cpu->fill(hf.data(), n, cfloat{0.5f, -2.f});
  gpu->fill(dq.data(), n, cfloat{0.5f, -2.f});
  cpu->scale(hf.data(), n, 3.f);
  gpu->scale(dq.data(), n, 3.f);
  gpu->to_host(back.data(), dq.data(), n);
  EXPECT_EQ(back, hf);
  EXPECT_EQ(back[n - 1], (cfloat{1.5f, -6.f}));
}

#endif  // RADSTREAM_HAVE_CUDA
