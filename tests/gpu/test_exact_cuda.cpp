// The exact operators on the GPU against their CPU twins and double sums: F^H d, F and Q (plain and with the
// field model; accurate and fast trig), the adjoint test, the Toeplitz normal operator, the cuSPARSE
// regularizer, the seed 001 case's CG against the double twin, and random voxels of the 128^3, M = 284,592
// case of seed 000 against double sums.
#include <gtest/gtest.h>

#include "exact/dense_exact.hpp"
#include "exact/exact_cpu.hpp"
#include "exact/exact_cuda.hpp"
#include "exact/exact_recon.hpp"
#include "exact/exact_slices.hpp"
#include "exact/segmented_toeplitz.hpp"
#include "exact/time_segmented.hpp"
#include "exact/toeplitz_normal.hpp"
#include "gpu/gpu_test_util.hpp"
#include "gpu/handles.hpp"
#include "io/exact_inputs.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/csr_matrix.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "noncart/nufft_operator_cuda.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "noncart/sense_operator_cuda.hpp"
#include "reference/exact_test_util.hpp"
#include "sim/phantom3d.hpp"

using namespace radstream;
using namespace radstream::exacttest;
using radstream::gputest::upload;

namespace {

using cd = std::complex<double>;

std::vector<cfloat> download(const DeviceBuffer<cfloat>& d, gpu::StreamRef s) {
  std::vector<cfloat> h(d.size());
  gpu::copy_to_host(h.data(), d.data(), h.size() * sizeof(cfloat), s);
  gpu::synchronize(s);
  return h;
}

// A device operator of the model applied to random data (adjoint, seed 1) and voxels (forward, seed 2), with
// the double-precision sums beside the results.
struct Applied {
  std::vector<cfloat> d, x, adjoint, forward;
  std::vector<cd> adjoint_ref, forward_ref;
};

Applied apply_random(LinearOperator& op, const ExactModel& m, gpu::StreamRef s) {
  Applied a{random_vector<float>(m.samples(), 1), random_vector<float>(m.voxels(), 2), {}, {}, {}, {}};
  a.adjoint_ref.resize(m.voxels());
  a.forward_ref.resize(m.samples());
  exact_adjoint_cpu<double>(m, to_double(a.d).data(), a.adjoint_ref.data());
  exact_forward_cpu<double>(m, to_double(a.x).data(), a.forward_ref.data());
  auto d_d = upload(a.d, s), d_x = upload(a.x, s);
  DeviceBuffer<cfloat> d_xo(Extents{m.voxels()}), d_do(Extents{m.samples()});
  op.adjoint(d_d.data(), d_xo.data());
  op.forward(d_x.data(), d_do.data());
  a.adjoint = download(d_xo, s);
  a.forward = download(d_do, s);
  return a;
}

void expect_twins(const ExactModel& model, bool fast, double tol, const char* what) {
  const ExactModel m = model.filled();
  gpu::Stream stream;
  ExactOperatorCuda op(m, fast, stream.get());
  const Applied a = apply_random(op, m, stream.get());
  EXPECT_LE(rel_err(a.adjoint, a.adjoint_ref), tol) << what << " adjoint, fast " << fast;
  EXPECT_LE(rel_err(a.forward, a.forward_ref), tol) << what << " forward, fast " << fast;
  if (!m.has_field()) {
    const std::size_t L = m.grid.q_grid().voxels();
    std::vector<cd> qd(L);
    exact_q_cpu<double>(m, nullptr, qd.data());
    DeviceBuffer<cfloat> d_q(Extents{L});
    op.q(nullptr, d_q.data());
    auto q = download(d_q, stream.get());
    // Displacements of -n never enter the convolution; the GPU computes half the grid and mirrors it
    // (Q(-s) = conj Q(s)), leaving those 0.
    const auto qg = m.grid.q_grid();
    for (std::size_t j = 0; j < L; ++j) {
      const long idx[3] = {long(j / (qg.n[1] * qg.n[2])), long((j / qg.n[2]) % qg.n[1]), long(j % qg.n[2])};
      bool edge = false;
      for (int a = 0; a < 3; ++a) edge = edge || (qg.n[a] > 1 && idx[a] == 0);
      if (edge) {
        EXPECT_EQ(q[j], cfloat(0.0f)) << j;
        qd[j] = 0;
      }
    }
    EXPECT_LE(rel_err(q, qd), tol) << what << " Q, fast " << fast;
  }
}

}  // namespace

TEST(ExactCuda, PlainOperatorsMatchTheDoubleSums) {
  RADSTREAM_REQUIRE_GPU();
  expect_twins(random_model(ExactGrid::image(32, 3), 3000, 1), false, 2e-5, "32^3");
  expect_twins(random_model(ExactGrid::image(32, 3), 3000, 1), true, 5e-5, "32^3");
  expect_twins(random_model(ExactGrid::image(64, 2), 5000, 2), false, 2e-5, "64^2");
  expect_twins(random_model(ExactGrid::image(64, 2), 5000, 2), true, 5e-5, "64^2");
  expect_twins(random_model(ExactGrid::image(37, 2), 777, 3), false, 2e-5, "37^2 (odd, ragged tiles)");
}

TEST(ExactCuda, FieldOperatorsMatchTheDoubleSums) {
  RADSTREAM_REQUIRE_GPU();
  for (bool gradients : {false, true}) {
    ExactModel m = random_model(ExactGrid::image(40, 2), 3000, 4);
    add_field(m, 5, gradients);
    expect_twins(m, false, 1e-5, gradients ? "field + gradients" : "field map");
    expect_twins(m, true, 5e-5, gradients ? "field + gradients" : "field map");
  }
  // Gradients without an off-resonance map (seed 001's data): the row-recurrence kernels; a third of the
  // voxels without gradients, 37 columns so that runs are ragged.
  ExactModel g = random_model(ExactGrid::image(37, 2), 2500, 14);
  add_field(g, 15, true);
  std::fill(g.fm.begin(), g.fm.end(), 0.0f);
  for (std::size_t v = 0; v < g.voxels(); v += 3) g.g[0][v] = g.g[1][v] = g.g[2][v] = 0.0f;
  expect_twins(g, false, 1e-5, "gradients only");
  expect_twins(g, true, 5e-5, "gradients only");
}

TEST(ExactCuda, OperatorsPassTheAdjointTestAndToeplitzMatchesTheCpu) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  const ExactModel m = random_model(ExactGrid::image(12, 3), 2000, 6).filled();
  auto op = std::make_shared<ExactOperatorCuda>(m, false, stream.get());
  EXPECT_LE(check_adjoint(*op).relative_error, 1e-5);
  ExactModel f = random_model(ExactGrid::image(20, 2), 1500, 7);
  add_field(f, 8, true);
  ExactOperatorCuda fop(f, false, stream.get());
  EXPECT_LE(check_adjoint(fop).relative_error, 1e-5);
  CsrOperatorCuda c(finite_difference_csr(m.grid.n), Extents{12, 12, 12}, stream.get());
  EXPECT_LE(check_adjoint(c).relative_error, 1e-6);
  // Toeplitz on the GPU against F^H F in double.
  DeviceBuffer<cfloat> d_q(Extents{m.grid.q_grid().voxels()});
  op->q(nullptr, d_q.data());
  ToeplitzNormalCuda toe(op, m.grid, d_q.data(), stream.get());
  const auto x = random_vector<float>(m.voxels(), 9);
  auto d_x = upload(x, stream.get());
  DeviceBuffer<cfloat> d_z(Extents{m.voxels()});
  toe.normal(d_x.data(), d_z.data());
  std::vector<cd> fx(m.samples()), ref(m.voxels());
  exact_forward_cpu<double>(m, to_double(x).data(), fx.data());
  exact_adjoint_cpu<double>(m, fx.data(), ref.data());
  EXPECT_LE(rel_err(download(d_z, stream.get()), ref), 1e-4);
  // cuSPARSE against the host CSR.
  const auto v = random_vector<float>(m.voxels(), 10);
  auto d_v = upload(v, stream.get());
  CsrOperatorCpu hc(finite_difference_csr(m.grid.n), Extents{12, 12, 12});
  std::vector<cfloat> hy(std::size_t(hc.codomain().size()));
  hc.forward(v.data(), hy.data());
  DeviceBuffer<cfloat> d_y(Extents{hy.size()});
  c.forward(d_v.data(), d_y.data());
  EXPECT_LE(rel_err(download(d_y, stream.get()), hy), 1e-7);
  std::vector<cfloat> hn(v.size());
  hc.normal(v.data(), hn.data());
  DeviceBuffer<cfloat> d_n(Extents{v.size()});
  c.normal(d_v.data(), d_n.data());
  EXPECT_LE(rel_err(download(d_n, stream.get()), hn), 1e-7);
}

// Seed 001's case: 8 CG iterations with the gradient model, GPU against the double-precision CPU twin.
TEST(ExactCuda, Seed001CaseMatchesTheDoubleTwin) {
  RADSTREAM_REQUIRE_GPU();
  RADSTREAM_REQUIRE_IMPATIENT_DATA("64x64x1");
  const ExactInputs in = load_impatient((test::impatient_data_dir() / "64x64x1").string());
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.gpu = true;
  o.iterations = 8;
  o.lambda = 1e-2;
  const auto ref = exact_cg_reference(in.model, in.kdata.data(), 8, 1e-2);
  for (std::size_t limit : {std::size_t(1024), std::size_t(0)}) {  // the stored matrix, then on the fly
    o.matrix_limit_mb = limit;
    o.fast_math = false;
    const auto got = exact_reconstruct(in.model, in.kdata, 1, o);
    EXPECT_EQ(got.matrix, limit > 0);
    const double nrmse = rel_err(got.image, ref);
    EXPECT_LE(nrmse, 1e-4);
    o.fast_math = true;
    const double fast = rel_err(exact_reconstruct(in.model, in.kdata, 1, o).image, ref);
    EXPECT_LE(fast, 1e-3);
    std::cout << "seed 001 case (" << (limit ? "stored matrix" : "on the fly")
              << "), GPU vs double twin NRMSE: accurate " << nrmse << ", fast trig " << fast << "\n";
  }
}

// The stored matrix on the GPU: against the double sums and its host twin, the adjoint test, and the same
// bits on every application (no atomics; partial sums in a fixed order).
TEST(ExactCuda, StoredMatrixMatchesTheDoubleSumsAndItsHostTwin) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  for (int odd : {0, 1}) {
    ExactModel m = random_model(ExactGrid::image(odd ? 37 : 40, 2), odd ? 2501 : 3000, 4);
    add_field(m, 5, true);
    if (odd) std::fill(m.fm.begin(), m.fm.end(), 0.0f);
    m = m.filled();
    for (bool fast : {false, true}) {
      ExactOperatorCuda src(m, fast, stream.get());
      DenseExactOperatorCuda op(src);
      DenseExactOperatorCpu twin(m);
      const Applied a = apply_random(op, m, stream.get());
      const double tol = fast ? 5e-5 : 1e-5;
      EXPECT_LE(rel_err(a.adjoint, a.adjoint_ref), tol) << "adjoint, odd " << odd << ", fast " << fast;
      EXPECT_LE(rel_err(a.forward, a.forward_ref), tol) << "forward, odd " << odd << ", fast " << fast;
      if (!fast) {
        std::vector<cfloat> xt(m.voxels()), dt(m.samples());
        twin.adjoint(a.d.data(), xt.data());
        twin.forward(a.x.data(), dt.data());
        EXPECT_LE(rel_err(a.adjoint, to_double(xt)), 2e-6) << "adjoint vs host twin, odd " << odd;
        EXPECT_LE(rel_err(a.forward, to_double(dt)), 2e-6) << "forward vs host twin, odd " << odd;
      }
      EXPECT_LE(check_adjoint(op).relative_error, 1e-6);
      const Applied again = apply_random(op, m, stream.get());
      EXPECT_EQ(again.adjoint, a.adjoint) << "a second application changed bits";
      EXPECT_EQ(again.forward, a.forward) << "a second application changed bits";
    }
  }
}

// The fused normal (one pass over G, rows of 1, 2 and 4 float4s per thread, and the two-pass fallback above
// 4,096 voxels) against F^H F in double and the host twin's normal.
TEST(ExactCuda, StoredMatrixNormalMatchesTheDoubleNormal) {
  RADSTREAM_REQUIRE_GPU();
  gpu::Stream stream;
  for (int n : {20, 40, 60, 71}) {
    ExactModel m = random_model(ExactGrid::image(n, 2), 700 + n, 24);
    add_field(m, 25, true);
    m = m.filled();
    ExactOperatorCuda src(m, false, stream.get());
    DenseExactOperatorCuda op(src);
    DenseExactOperatorCpu twin(m);
    const auto x = random_vector<float>(m.voxels(), 3);
    std::vector<cd> fx(m.samples()), ref(m.voxels());
    exact_forward_cpu<double>(m, to_double(x).data(), fx.data());
    exact_adjoint_cpu<double>(m, fx.data(), ref.data());
    auto d_x = upload(x, stream.get());
    DeviceBuffer<cfloat> d_z(Extents{m.voxels()});
    op.normal(d_x.data(), d_z.data());
    const auto z = download(d_z, stream.get());
    std::vector<cfloat> zt(m.voxels());
    twin.normal(x.data(), zt.data());
    EXPECT_LE(rel_err(z, ref), 1e-5) << n << "^2";
    EXPECT_LE(rel_err(z, to_double(zt)), 5e-6) << n << "^2 vs host twin";
    op.normal(d_x.data(), d_z.data());
    EXPECT_EQ(download(d_z, stream.get()), z) << n << "^2: a second application changed bits";
  }
}

// Seed 000's size: 128^3 voxels, M = 284,592 samples; F^H d on 64 random voxels against double sums.
TEST(ExactCuda, LargeCaseRandomVoxelsMatchTheDoubleSum) {
  RADSTREAM_REQUIRE_GPU();
  const ExactModel m = random_model(ExactGrid::image(128, 3), 284592, 12, true).filled();
  const auto d = random_vector<float>(m.samples(), 13);
  std::mt19937 rng(14);
  std::uniform_int_distribution<std::size_t> pick(0, m.voxels() - 1);
  std::vector<std::size_t> voxels(64);
  for (auto& v : voxels) v = pick(rng);
  // The double sum at those voxels only: a model whose grid is one voxel at that position.
  std::vector<cd> ref(voxels.size());
  for (std::size_t j = 0; j < voxels.size(); ++j) {
    ExactModel one = m;
    const std::size_t v = voxels[j];
    one.grid.n = {1, 1, 1};
    one.grid.origin = {m.grid.origin[0] + double(v / (128 * 128)), m.grid.origin[1] + double((v / 128) % 128),
                       m.grid.origin[2] + double(v % 128)};
    exact_adjoint_cpu<double>(one, to_double(d).data(), &ref[j]);
  }
  gpu::Stream stream;
  for (bool fast : {false, true}) {
    ExactOperatorCuda op(m, fast, stream.get());
    auto d_d = upload(d, stream.get());
    DeviceBuffer<cfloat> d_x(Extents{m.voxels()});
    op.adjoint(d_d.data(), d_x.data());
    const auto x = download(d_x, stream.get());
    std::vector<cfloat> got(voxels.size());
    for (std::size_t j = 0; j < voxels.size(); ++j) got[j] = x[voxels[j]];
    EXPECT_LE(rel_err(got, ref), fast ? 5e-5 : 2e-5) << "fast " << fast;
  }
}

// The time-segmented field operator on the GPU (inner F: the exact GPU operator) against its CPU twin.
TEST(ExactCuda, TimeSegmentedMatchesTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  ExactModel m = random_model(ExactGrid::image(32, 2), 2000, 51);
  add_field(m, 52, false);
  ExactModel plain = m;
  plain.fm.clear();
  plain.t.clear();
  gpu::Stream stream;
  auto fg = std::make_shared<ExactOperatorCuda>(plain, false, stream.get());
  TimeSegmentedCuda g(fg, m.fm, m.t, 6, stream.get());
  TimeSegmentedCpu h(std::make_shared<ExactOperatorCpu>(plain), m.fm, m.t, 6);
  const auto x = random_vector<float>(m.voxels(), 53), y = random_vector<float>(m.samples(), 54);
  std::vector<cfloat> hy(m.samples()), hx(m.voxels());
  h.forward(x.data(), hy.data());
  h.adjoint(y.data(), hx.data());
  auto d_x = upload(x, stream.get()), d_y = upload(y, stream.get());
  DeviceBuffer<cfloat> d_gy(Extents{m.samples()}), d_gx(Extents{m.voxels()});
  g.forward(d_x.data(), d_gy.data());
  g.adjoint(d_y.data(), d_gx.data());
  EXPECT_LE(rel_err(download(d_gy, stream.get()), hy), 1e-5);
  EXPECT_LE(rel_err(download(d_gx, stream.get()), hx), 1e-5);
  EXPECT_LE(check_adjoint(g).relative_error, 1e-5);
}

// The time-segmented SENSE normal through L(L+1)/2 Toeplitz kernels on the GPU against its CPU twin (the same
// NUFFT on both), and against the GPU time-segmented operator's own forward-then-adjoint.
TEST(ExactCuda, SegmentedToeplitzMatchesTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  const int N = 32, C = 4, spokes = 30, samples = 64;
  const NufftKernel kernel{6, 2.0, 4096};
  const auto traj = test::golden_trajectory(spokes, samples);
  const std::size_t Mt = traj.size() / 2;
  const auto maps = test::smooth_coil_maps(N, C);
  const auto x = test::random_complex(std::size_t(N) * N, 7);
  gpu::Stream stream;
  const auto s = stream.get();
  auto d_traj = upload(traj, s);
  auto d_maps = upload(maps, s);
  auto d_x = upload(x, s);
  for (int L : {3, 4}) {
    SegmentedToeplitzSpec spec{
        N, C, maps.data(), test::smooth_field_map(N, 80.0), test::readout_times(spokes, samples, 2e-3, 8e-5),
        L};
    auto hs = std::make_shared<SenseOperatorCpu>(N, C, Mt, kernel, false);
    hs->set_maps(maps.data());
    hs->set_points(traj.data());
    NufftOperatorCpu hpsf(2, std::array<int, 3>{2 * N, 2 * N, 1}, 1, Mt, kernel);
    hpsf.set_points(traj.data());
    SegmentedToeplitzCpu h(std::make_shared<TimeSegmentedCpu>(hs, spec.fm, spec.t, L), spec);
    h.make_kernels(hpsf);
    std::vector<cfloat> hz(x.size());
    h.normal(x.data(), hz.data());
    auto gs = std::make_shared<SenseOperatorCuda>(N, C, Mt, kernel, false, s);
    gs->set_maps(d_maps.data());
    gs->set_points(d_traj.data());
    NufftOperatorCuda gpsf(2 * N, 1, Mt, kernel, s);
    gpsf.set_points(d_traj.data());
    spec.maps = d_maps.data();
    SegmentedToeplitzCuda g(std::make_shared<TimeSegmentedCuda>(gs, spec.fm, spec.t, L, s), spec, s);
    g.make_kernels(gpsf);
    DeviceBuffer<cfloat> d_z(Extents{x.size()}), d_zd(Extents{x.size()});
    g.normal(d_x.data(), d_z.data());
    g.normal_direct(d_x.data(), d_zd.data());
    const auto z = download(d_z, s);
    const double vs_cpu = rel_err(z, hz), vs_direct = rel_err(z, download(d_zd, s));
    std::printf("%d segments: GPU Toeplitz vs CPU twin %.3g, vs GPU forward-then-adjoint %.3g\n", L, vs_cpu,
                vs_direct);
    EXPECT_LE(vs_cpu, 1e-5);
    EXPECT_LE(vs_direct, 1e-4);
    EXPECT_LE(check_adjoint(g).relative_error, 1e-5);
  }
}

// A stack of slices over every GPU there is: each slice as on its own, each on a real device.
TEST(ExactCuda, SlicesSpreadOverTheGpus) {
  RADSTREAM_REQUIRE_GPU();
  const ExactModel m = random_model(ExactGrid::image(32, 2), 1500, 81);
  std::vector<std::vector<cfloat>> data;
  std::vector<ExactSlice> slices;
  for (unsigned z = 0; z < 6; ++z) data.push_back(random_vector<float>(m.samples(), 90 + z));
  for (auto& d : data) slices.push_back({&m, &d});
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.gpu = true;
  o.iterations = 5;
  const auto r = exact_reconstruct_slices(slices, 1, o);
  const int devices = gpu::query().device_count;
  for (std::size_t z = 0; z < slices.size(); ++z) {
    EXPECT_GE(r.device_of[z], 0);
    EXPECT_LT(r.device_of[z], devices);
    EXPECT_LE(rel_err(r.slices[z].image, exact_reconstruct(m, data[z], 1, o).image), 1e-6) << z;
  }
  EXPECT_THROW(exact_reconstruct_slices(slices, 1, o, devices + 1), ConfigError);
}

// Seed 000's 3D case (128^3, M = 284,592, without and with 1 % noise): CG with the anatomical prior against
// the density-compensated adjoint, scored like the seed (percent error against the true phantom): the
// iterative error at most 0.35 times the gridding-like error (the seed: 12 % vs 42 %, 16 % vs 47 %).
TEST(ExactCuda, ThreeDCaseWithTheAnatomicalPriorReachesTheSeedsRatio) {
  RADSTREAM_REQUIRE_GPU();
  const auto regions = region_labels_3d(shepp_logan_3d(), 128);
  for (double noise : {0.0, 0.01}) {
    const Phantom3dCase c = phantom_3d_case(128, 2156, 132, noise, 7);
    const ExactModel m = exact_model_3d(c.k, 128);
    std::vector<cfloat> dcf = c.data;
    for (std::size_t i = 0; i < dcf.size(); ++i)
      dcf[i] *= c.k[i][0] * c.k[i][0] + c.k[i][1] * c.k[i][1] + c.k[i][2] * c.k[i][2];
    ExactReconOptions o;
    o.gpu = true;
    const double adjoint = score_image(exact_reconstruct(m, dcf, 1, o).image, c.truth, true).percent_error;
    o.method = ExactMethod::Cg;
    o.iterations = 60;
    o.lambda = 10;
    o.regions = regions;
    const double cg = score_image(exact_reconstruct(m, c.data, 1, o).image, c.truth, false).percent_error;
    std::printf(
        "3D case, noise %.2f: CG with the anatomical prior %.1f %%, DCF adjoint %.1f %%, ratio %.2f\n", noise,
        cg, adjoint, cg / adjoint);
    EXPECT_LE(cg / adjoint, 0.35) << "noise " << noise;
  }
}
