// The 3D CUDA NUFFT plan and operator (3D radial kooshball, stack of stars, random points) against the CPU
// plan (dims 3) and the exact NUDFT in double; the 3D operator's adjoint test on the device; 3D CG-SENSE on
// the GPU against its CPU twin.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/math.hpp"
#include "gpu_test_util.hpp"
#include "io/cfl.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "noncart/sense_operator_3d.hpp"
#include "sense3d_test_util.hpp"
#include "sim/nudft.hpp"
#ifdef RADSTREAM_HAVE_CUDA
#include "noncart/nufft_operator_cuda.hpp"
#endif

using namespace radstream;
using gputest::download;
using gputest::rel_error;
using gputest::upload;
using sense3d::kooshball;
using sense3d::stack_of_stars;

namespace {

[[maybe_unused]] std::vector<float> random_points3(std::size_t n, unsigned seed) {
  return gputest::random_points(n, 3, seed);
}

[[maybe_unused]] double rel_error_exact(const std::vector<cfloat>& a,
                                        const std::vector<std::complex<double>>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num += std::norm(std::complex<double>(a[i]) - b[i]);
    den += std::norm(b[i]);
  }
  return std::sqrt(num / den);
}

using Stream = gputest::TestStream;

}  // namespace

#ifdef RADSTREAM_HAVE_CUDA

TEST(NufftCuda3d, SpreadAndInterpMatchTheCpuPlan) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  auto hostile = random_points3(700, 3);  // with points the plans must ignore, and points beyond the edge
  hostile[0] = std::numeric_limits<float>::quiet_NaN();
  hostile[4] = std::numeric_limits<float>::infinity();
  hostile[8] = 1e7f;
  hostile[9] = 0.75f;
  hostile[13] = -1.3f;
  const std::vector<std::vector<float>> trajs = {kooshball(40, 48), stack_of_stars(13, 40, 10), hostile};
  const std::array<int, 3> grid{36, 32, 20};  // 36 is not a whole number of bins
  for (int coils : {1, 5}) {
    for (int width : {4, 5, 6, 8}) {
      for (std::size_t g = 0; g < trajs.size(); ++g) {
        const auto& traj = trajs[g];
        const std::size_t n = traj.size() / 3;
        const NufftKernel k{width, 2.0, 1024};
        NufftPlanCpu cpu(3, grid, k, n);
        cpu.set_points(traj.data(), n);
        const auto grids = test::random_complex(std::size_t(coils) * cpu.grid_size(), 7);
        const auto samples = test::random_complex(std::size_t(coils) * n, 8);
        std::vector<cfloat> y_cpu(samples.size()), g_cpu(grids.size());
        cpu.interp(grids.data(), y_cpu.data(), coils);
        cpu.spread(samples.data(), g_cpu.data(), coils);
        NufftPlanCuda3d gpu(grid, k, n, st.s);
        auto d_traj = upload(traj, st.s);
        auto d_grids = upload(grids, st.s);
        auto d_samples = upload(samples, st.s);
        DeviceBuffer<cfloat> d_y(Extents{samples.size()}), d_g(Extents{grids.size()});
        gpu.set_points(d_traj.data(), n);
        gpu.interp(d_grids.data(), d_y.data(), coils);
        gpu.spread(d_samples.data(), d_g.data(), coils);
        const double ei = rel_error(download(d_y, st.s), y_cpu), es = rel_error(download(d_g, st.s), g_cpu);
        std::printf("3D geometry %zu, coils %d, W%d: interp CUDA vs CPU %.2e, spread %.2e\n", g, coils, width,
                    ei, es);
        EXPECT_LE(ei, 1e-5);
        EXPECT_LE(es, 1e-5);
      }
    }
  }
}

TEST(NufftCuda3d, OperatorMatchesExactNudftBothWaysAndIsAdjoint) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const std::array<int, 3> N{16, 12, 10};
  const std::size_t n = 2500, pixels = std::size_t(N[0]) * N[1] * N[2];
  const auto traj = random_points3(n, 9);
  const auto img = test::random_complex(pixels, 10);
  const auto data = test::random_complex(n, 11);
  std::vector<std::size_t> all(pixels);
  std::iota(all.begin(), all.end(), std::size_t(0));
  const auto ref_y = forward_nudft(traj, 3, img, N);
  const auto ref_x = adjoint_nudft_at(traj, 3, data, 1, N, all);
  for (int width : {4, 6}) {
    NufftOperatorCuda op(3, N, 1, n, {width, 2.0, 4096}, st.s);
    auto d_traj = upload(traj, st.s);
    op.set_points(d_traj.data());
    auto d_img = upload(img, st.s);
    auto d_data = upload(data, st.s);
    DeviceBuffer<cfloat> d_y(Extents{n}), d_x(Extents{pixels});
    op.forward(d_img.data(), d_y.data());
    op.adjoint(d_data.data(), d_x.data());
    const double ef = rel_error_exact(download(d_y, st.s), ref_y),
                 ea = rel_error_exact(download(d_x, st.s), ref_x);
    const AdjointCheck c = check_adjoint(op, 4);
    std::printf("3D CUDA NUFFT W%d: forward vs exact %.2e, adjoint vs exact %.2e, adjointness %.2e\n", width,
                ef, ea, c.relative_error);
    EXPECT_LE(ef, width == 6 ? 1e-4 : 2e-3);
    EXPECT_LE(ea, width == 6 ? 1e-4 : 2e-3);
    EXPECT_LE(c.relative_error, 1e-5);
  }
}

TEST(NufftCuda3d, OperatorMatchesTheCpuTwinOnAKooshballAndAStackOfStars) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int coils = 4;
  for (const auto& [traj, N] : {std::pair{kooshball(200, 64), std::array<int, 3>{32, 32, 32}},
                                std::pair{stack_of_stars(48, 64, 16), std::array<int, 3>{32, 32, 16}}}) {
    const std::size_t n = traj.size() / 3, pixels = std::size_t(N[0]) * N[1] * N[2];
    const auto img = test::random_complex(coils * pixels, 12);
    const auto data = test::random_complex(coils * n, 13);
    const NufftKernel k{6, 2.0, 1024};
    NufftOperatorCpu cpu(3, N, coils, n, k);
    cpu.set_points(traj.data());
    std::vector<cfloat> y_cpu(coils * n), x_cpu(img.size());
    cpu.forward(img.data(), y_cpu.data());
    cpu.adjoint(data.data(), x_cpu.data());
    NufftOperatorCuda gpu(3, N, coils, n, k, st.s);
    auto d_traj = upload(traj, st.s);
    gpu.set_points(d_traj.data());
    auto d_img = upload(img, st.s);
    auto d_data = upload(data, st.s);
    DeviceBuffer<cfloat> d_y(Extents{coils * n}), d_x(Extents{img.size()});
    gpu.forward(d_img.data(), d_y.data());
    gpu.adjoint(d_data.data(), d_x.data());
    const double ef = rel_error(download(d_y, st.s), y_cpu), ea = rel_error(download(d_x, st.s), x_cpu);
    std::printf("3D CUDA vs CPU operator %dx%dx%d, %zu points x %d coils: forward %.2e, adjoint %.2e\n", N[0],
                N[1], N[2], n, coils, ef, ea);
    EXPECT_LE(ef, 1e-5);
    EXPECT_LE(ea, 1e-5);
  }
}

// `radstream nufft` in 3D, both directions, on the GPU and on the CPU: the same numbers (BART's layout and
// scaling; the BART comparison itself is tests/reference/test_nufft_bart.cpp).
TEST(NufftCuda3d, TheNufftCommandOnTheGpuEqualsTheCpuPath) {
  RADSTREAM_REQUIRE_GPU();
  test::TempDir dir;
  const std::array<int, 3> N{24, 20, 16};
  const auto k = kooshball(120, 40);
  const std::size_t n = k.size() / 3;
  std::vector<cfloat> traj(3 * n);  // BART units: +-N/2 per axis
  for (std::size_t j = 0; j < n; ++j)
    for (int a = 0; a < 3; ++a) traj[3 * j + a] = cfloat(k[3 * j + a] * float(N[a]), 0.f);
  write_cfl((dir / "traj"), {3, 40, 120}, traj);
  write_cfl((dir / "img"), {N[0], N[1], N[2], 2}, test::random_complex(2 * 24 * 20 * 16, 3));
  write_cfl((dir / "ksp"), {1, 40, 120, 2}, test::random_complex(2 * n, 4));
  auto run = [&](const std::string& args) {
    const auto r = test::run_command(test::radstream_binary() + " nufft " + args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    return r.output;
  };
  const std::string t = " -t " + (dir / "traj") + " ";
  const std::string out = run("--backend cuda" + t + (dir / "img") + " " + (dir / "f_gpu"));
  EXPECT_NE(out.find("on cuda"), std::string::npos) << out;
  run("--backend cpu" + t + (dir / "img") + " " + (dir / "f_cpu"));
  run("--backend cuda -a -d 24:20:16" + t + (dir / "ksp") + " " + (dir / "a_gpu"));
  run("--backend cpu -a -d 24:20:16" + t + (dir / "ksp") + " " + (dir / "a_cpu"));
  const auto f_gpu = read_cfl((dir / "f_gpu")), f_cpu = read_cfl((dir / "f_cpu"));
  const auto a_gpu = read_cfl((dir / "a_gpu")), a_cpu = read_cfl((dir / "a_cpu"));
  EXPECT_EQ(f_gpu.dims, f_cpu.dims);
  EXPECT_EQ(a_gpu.dims, a_cpu.dims);
  const double ef = rel_error(f_gpu.data, f_cpu.data), ea = rel_error(a_gpu.data, a_cpu.data);
  std::printf("radstream nufft 3D, GPU vs CPU: forward %.2e, adjoint %.2e\n", ef, ea);
  EXPECT_LE(ef, 1e-5);
  EXPECT_LE(ea, 1e-5);
}

// The 3D SENSE operator and a fixed-count CG-SENSE solve on the GPU against the CPU twin, on a kooshball and
// a stack of stars (k-space from the exact NUDFT).
TEST(NufftCuda3d, CgSenseMatchesTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  Stream st;
  const int n = 12, coils = 4;
  const std::array<int, 3> N{n, n, n};
  const auto truth = sense3d::bandlimited_phantom(n, 0.45);
  const auto maps = sense3d::smooth_maps(N, coils);
  for (const auto& traj : {kooshball(400, 24), stack_of_stars(36, 24, n)}) {
    const std::size_t points = traj.size() / 3;
    const auto y = sense3d::exact_data(traj, truth, maps, N, coils);
    const NufftKernel k{6, 2.0, 4096};
    SenseOperator3dCpu cpu(N, coils, points, k);
    cpu.set_maps(maps.data());
    cpu.set_points(traj.data());
    SenseOperator3dCuda gpu(N, coils, points, k, st.s);
    auto d_maps = upload(maps, st.s);
    auto d_traj = upload(traj, st.s);
    auto d_y = upload(y, st.s);
    gpu.set_maps(d_maps.data());
    gpu.set_points(d_traj.data());
    // The operator both ways.
    std::vector<cfloat> b_cpu(truth.size()), f_cpu(y.size());
    cpu.adjoint(y.data(), b_cpu.data());
    cpu.forward(truth.data(), f_cpu.data());
    auto d_truth = upload(truth, st.s);
    DeviceBuffer<cfloat> d_b(Extents{truth.size()}), d_f(Extents{y.size()}), d_x(Extents{truth.size()});
    gpu.adjoint(d_y.data(), d_b.data());
    gpu.forward(d_truth.data(), d_f.data());
    const double ea = rel_error(download(d_b, st.s), b_cpu), ef = rel_error(download(d_f, st.s), f_cpu);
    const AdjointCheck adj = check_adjoint(gpu, 6);
    // Ten CG iterations on both.
    CgOptions o;
    o.max_iterations = 10;
    auto host_ops = make_vector_ops_cpu();
    ConjugateGradient cg_cpu(truth.size(), *host_ops);
    std::vector<cfloat> x_cpu(truth.size());
    cg_cpu.solve(cpu, b_cpu.data(), x_cpu.data(), o, false);
    auto dev_ops = make_vector_ops_cuda(st.s);
    ConjugateGradient cg_gpu(truth.size(), *dev_ops);
    cg_gpu.solve(gpu, d_b.data(), d_x.data(), o, false);
    const auto x_gpu = download(d_x, st.s);
    const double ex = rel_error(x_gpu, x_cpu);
    std::printf(
        "3D SENSE %zu points x %d coils: CUDA vs CPU forward %.2e, adjoint %.2e, adjoint test %.2e; "
        "10 CG iterations %.2e (error to the truth %.3f)\n",
        points, coils, ef, ea, adj.relative_error, ex, rel_error(x_gpu, truth));
    EXPECT_LE(ef, 1e-5);
    EXPECT_LE(ea, 1e-5);
    EXPECT_LE(adj.relative_error, 1e-5);
    EXPECT_LE(ex, 1e-4);
  }
}

#endif  // RADSTREAM_HAVE_CUDA
