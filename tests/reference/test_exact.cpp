// The seeds' exact operators on the host: F^H d, F and Q in float (the CUDA kernels' twin) against the same
// sums in double, the adjoint test, Q's Toeplitz embedding against the direct F^H F, Im(Q) = 0 for a
// trajectory symmetric about k = 0, the CSR regularizer, and CG in float against its double twin.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "exact/exact_cpu.hpp"
#include "exact/exact_recon.hpp"
#include "exact/exact_slices.hpp"
#include "exact/toeplitz_normal.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/csr_matrix.hpp"
#include "reference/exact_test_util.hpp"

using namespace radstream;
using namespace radstream::exacttest;

namespace {

using cd = std::complex<double>;

}  // namespace

TEST(Exact, AdjointAndForwardMatchTheDoubleSumOnA32CubedVolume) {
  const ExactModel m = random_model(ExactGrid::image(32, 3), 1200, 11).filled();
  const auto d = random_vector<float>(m.samples(), 1);
  const auto x = random_vector<float>(m.voxels(), 2);
  std::vector<cfloat> xf(m.voxels()), df(m.samples());
  std::vector<cd> xd(m.voxels()), dd(m.samples());
  exact_adjoint_cpu<float>(m, d.data(), xf.data());
  exact_adjoint_cpu<double>(m, to_double(d).data(), xd.data());
  EXPECT_LE(rel_err(xf, xd), 2e-5);
  exact_forward_cpu<float>(m, x.data(), df.data());
  exact_forward_cpu<double>(m, to_double(x).data(), dd.data());
  EXPECT_LE(rel_err(df, dd), 2e-5);
}

TEST(Exact, QMatchesTheDoubleSumIn2DAnd3D) {
  for (const auto& grid : {ExactGrid::image(32, 2), ExactGrid::image(12, 3)}) {
    const ExactModel m = random_model(grid, 3000, 5).filled();
    const std::size_t L = grid.q_grid().voxels();
    std::vector<cfloat> qf(L);
    std::vector<cd> qd(L);
    exact_q_cpu<float>(m, nullptr, qf.data());
    exact_q_cpu<double>(m, nullptr, qd.data());
    EXPECT_LE(rel_err(qf, qd), 2e-5) << grid.n[0] << " x " << grid.n[1] << " x " << grid.n[2];
    // Q at displacement 0 is the sum of the weights: M.
    const auto& qg = grid.q_grid();
    const std::size_t zero = (std::size_t(-qg.origin[0]) * qg.n[1] + std::size_t(-qg.origin[1])) * qg.n[2] +
                             std::size_t(-qg.origin[2]);
    EXPECT_NEAR(qd[zero].real(), 3000.0, 1e-9);
  }
}

TEST(Exact, QIsRealForATrajectorySymmetricAboutZero) {
  const ExactModel m = random_model(ExactGrid::image(24, 2), 4000, 7, true).filled();
  std::vector<cfloat> q(m.grid.q_grid().voxels());
  exact_q_cpu<float>(m, nullptr, q.data());
  double max_abs = 0, max_im = 0;
  for (const auto& v : q) {
    max_abs = std::max(max_abs, double(std::abs(v)));
    max_im = std::max(max_im, double(std::abs(v.imag())));
  }
  EXPECT_LE(max_im / max_abs, 1e-6);
  EXPECT_NEAR(max_abs, 4000.0, 4000.0 * 1e-6);
}

TEST(Exact, OperatorsPassTheAdjointTest) {
  ExactOperatorCpu plain(random_model(ExactGrid::image(10, 3), 700, 3));
  EXPECT_LE(check_adjoint(plain).relative_error, 1e-5);
  ExactModel f = random_model(ExactGrid::image(16, 2), 900, 4);
  add_field(f, 9, true);
  ExactOperatorCpu field(f);
  EXPECT_LE(check_adjoint(field).relative_error, 1e-5);
  CsrOperatorCpu c(finite_difference_csr({4, 5, 6}), Extents{4, 5, 6});
  EXPECT_LE(check_adjoint(c).relative_error, 1e-6);
}

// (F^H F x) through Q on the 2N grid equals the direct double sums F^H (F x) to 1e-4.
TEST(Exact, ToeplitzNormalEqualsTheDirectNormal) {
  for (const auto& grid : {ExactGrid::image(32, 2), ExactGrid::image(10, 3)}) {
    const ExactModel m = random_model(grid, 2500, 21).filled();
    auto op = std::make_shared<ExactOperatorCpu>(m);
    std::vector<cfloat> q(grid.q_grid().voxels());
    exact_q_cpu<float>(m, nullptr, q.data());
    ToeplitzNormalCpu toe(op, grid, q.data());
    const auto x = random_vector<float>(m.voxels(), 8);
    std::vector<cfloat> z(m.voxels());
    toe.normal(x.data(), z.data());
    std::vector<cd> fx(m.samples()), ref(m.voxels());
    exact_forward_cpu<double>(m, to_double(x).data(), fx.data());
    exact_adjoint_cpu<double>(m, fx.data(), ref.data());
    EXPECT_LE(rel_err(z, ref), 1e-4) << grid.n[0] << " x " << grid.n[1] << " x " << grid.n[2];
  }
}

TEST(Exact, FiniteDifferenceCsrIsTheNeumannGradient) {
  const CsrMatrix c = finite_difference_csr({1, 3, 4});
  // Rows: 3 x 3 differences along axis 2 and 2 x 4 along axis 1.
  EXPECT_EQ(c.rows, 3 * 3 + 2 * 4);
  EXPECT_EQ(c.cols, 12);
  EXPECT_EQ(c.nonzeros(), std::size_t(2 * c.rows));
  const CsrMatrix t = c.transposed();
  EXPECT_EQ(t.rows, 12);
  EXPECT_EQ(t.nonzeros(), c.nonzeros());
  // C^T C at the interior voxel (1, 1) of a 3 x 4 image is the 5-point Laplacian: 4 on it, -1 on neighbours.
  std::vector<cfloat> x(12), cx(std::size_t(c.rows)), ctcx(12);
  x[1 * 4 + 1] = 1.0f;
  CsrOperatorCpu op(c, Extents{3, 4});
  op.forward(x.data(), cx.data());
  op.adjoint(cx.data(), ctcx.data());
  EXPECT_FLOAT_EQ(ctcx[5].real(), 4.0f);
  for (int n : {1, 4, 6, 9}) EXPECT_FLOAT_EQ(ctcx[n].real(), -1.0f) << n;
  // normal() is one SpMV with the product C^T C: the same Laplacian, 12 diagonal + 2 x 17 neighbour entries.
  std::vector<cfloat> nz(12);
  op.normal(x.data(), nz.data());
  for (int n = 0; n < 12; ++n) EXPECT_EQ(nz[n], ctcx[n]) << n;
  EXPECT_EQ(c.gram().nonzeros(), std::size_t(12 + 2 * (3 * 3 + 2 * 4)));
  // The product of a random sparse matrix against the dense C^T C in double.
  CsrMatrix r;
  r.rows = 9;
  r.cols = 7;
  std::mt19937 rng(5);
  std::vector<double> dense(9 * 7, 0.0);
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 7; ++j)
      if (rng() % 3 == 0) {
        const float v = float(int(rng() % 17) - 8) / 4.0f;
        r.col.push_back(j);
        r.val.push_back(v);
        dense[std::size_t(i) * 7 + j] = v;
      }
    r.row_ptr.push_back(int(r.col.size()));
  }
  const CsrMatrix g = r.gram();
  g.validate();
  for (int a = 0; a < 7; ++a) {
    std::vector<double> row(7, 0.0);
    for (int j = g.row_ptr[a]; j < g.row_ptr[a + 1]; ++j) row[std::size_t(g.col[j])] = g.val[j];
    for (int b = 0; b < 7; ++b) {
      double ref = 0;
      for (int i = 0; i < 9; ++i) ref += dense[std::size_t(i) * 7 + a] * dense[std::size_t(i) * 7 + b];
      EXPECT_DOUBLE_EQ(row[std::size_t(b)], ref) << a << ", " << b;
    }
  }
  CsrMatrix bad = c;
  bad.col[3] = 99;
  EXPECT_THROW(bad.validate(), InputError);
}

// CG in float (Toeplitz normal through Q) against the double twin (direct F^H F), 8 iterations.
TEST(Exact, CgInFloatMatchesTheDoubleTwin) {
  const ExactModel m = random_model(ExactGrid::image(24, 2), 2000, 31);
  // Data of a smooth object: F of a disc plus noise.
  std::vector<cd> obj(m.voxels());
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 24; ++x) obj[y * 24 + x] = (x - 12) * (x - 12) + (y - 12) * (y - 12) < 49 ? 1.0 : 0.0;
  std::vector<cd> dd(m.samples());
  exact_forward_cpu<double>(m.filled(), obj.data(), dd.data());
  std::vector<cfloat> d(dd.begin(), dd.end());
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.iterations = 8;
  o.lambda = 1.0;
  const auto got = exact_reconstruct(m, d, 1, o);
  EXPECT_EQ(got.iterations, 8);
  const auto ref = exact_cg_reference(m, d.data(), 8, 1.0);
  EXPECT_LE(rel_err(got.image, ref), 1e-4);
  // And the direct normal (no Toeplitz) agrees too.
  o.toeplitz = false;
  EXPECT_LE(rel_err(exact_reconstruct(m, d, 1, o).image, ref), 1e-4);
  // CG moved towards the object: closer than F^H d scaled to the best fit.
  EXPECT_LE(rel_err(got.image, obj), 0.5);
}

TEST(Exact, BadInputsAreRefusedByName) {
  ExactModel m = random_model(ExactGrid::image(8, 2), 50, 1);
  m.k[2][7] = std::numeric_limits<float>::quiet_NaN();
  try {
    m.validate();
    FAIL() << "a NaN trajectory was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("k[2][7]"), std::string::npos) << e.what();
  }
  ExactModel f = random_model(ExactGrid::image(8, 2), 50, 1);
  f.fm.assign(64, 1.0f);
  EXPECT_THROW(f.validate(), InputError);  // a field map without times
  ExactReconOptions o;
  o.fast_math = true;
  EXPECT_THROW(exact_reconstruct(random_model(ExactGrid::image(8, 2), 50, 1), std::vector<cfloat>(50), 1, o),
               ConfigError);
}

// Slices are independent problems: the stack's results equal each slice reconstructed on its own.
TEST(Exact, SlicesAreReconstructedIndependently) {
  const ExactModel m = random_model(ExactGrid::image(12, 2), 400, 61);
  std::vector<std::vector<cfloat>> data;
  std::vector<ExactSlice> slices;
  for (unsigned z = 0; z < 3; ++z) data.push_back(random_vector<float>(m.samples(), 70 + z));
  for (auto& d : data) slices.push_back({&m, &d});
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.iterations = 4;
  const auto r = exact_reconstruct_slices(slices, 1, o);
  ASSERT_EQ(r.slices.size(), 3u);
  for (std::size_t z = 0; z < 3; ++z) {
    EXPECT_EQ(r.device_of[z], -1);
    EXPECT_EQ(r.slices[z].image, exact_reconstruct(m, data[z], 1, o).image) << z;
  }
  EXPECT_NE(r.slices[0].image, r.slices[1].image);
  EXPECT_THROW(exact_reconstruct_slices({{&m, nullptr}}, 1, o), ConfigError);
}
