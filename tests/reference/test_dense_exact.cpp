// The stored exact matrix (dense_exact.hpp) on the host: its F and F^H against the double-precision direct
// sums (with the field model and without), the adjoint test, repeated applications bit-identical, and seed
// 001's CG through it against the double twin (and equal to the on-the-fly sums' CG within the twin
// tolerance).
#include <gtest/gtest.h>

#include "exact/dense_exact.hpp"
#include "exact/exact_cpu.hpp"
#include "exact/exact_recon.hpp"
#include "io/exact_inputs.hpp"
#include "linalg/adjoint_check.hpp"
#include "reference/exact_test_util.hpp"
#include "test_util.hpp"

using namespace radstream;
using namespace radstream::exacttest;

namespace {

using cd = std::complex<double>;

void expect_double_sums(const ExactModel& model, double tol, const char* what) {
  const ExactModel m = model.filled();
  DenseExactOperatorCpu op(m);
  const auto d = random_vector<float>(m.samples(), 1), x = random_vector<float>(m.voxels(), 2);
  std::vector<cd> xd(m.voxels()), dd(m.samples());
  exact_adjoint_cpu<double>(m, to_double(d).data(), xd.data());
  exact_forward_cpu<double>(m, to_double(x).data(), dd.data());
  std::vector<cfloat> xo(m.voxels()), doo(m.samples());
  op.adjoint(d.data(), xo.data());
  op.forward(x.data(), doo.data());
  EXPECT_LE(rel_err(xo, xd), tol) << what << " adjoint";
  EXPECT_LE(rel_err(doo, dd), tol) << what << " forward";
  EXPECT_LE(check_adjoint(op).relative_error, 1e-6) << what;
  // Fixed summation order: the same input gives the same bits.
  std::vector<cfloat> again(m.voxels());
  op.adjoint(d.data(), again.data());
  EXPECT_EQ(again, xo) << what;
}

}  // namespace

TEST(DenseExact, MatchesTheDoubleSumsWithAndWithoutTheFieldModel) {
  ExactModel f = random_model(ExactGrid::image(24, 2), 1500, 4);
  add_field(f, 5, true);
  expect_double_sums(f, 1e-5, "field + gradients");
  ExactModel g = random_model(ExactGrid::image(17, 2), 901, 14);  // odd sizes
  add_field(g, 15, true);
  std::fill(g.fm.begin(), g.fm.end(), 0.0f);
  expect_double_sums(g, 1e-5, "gradients only");
  expect_double_sums(random_model(ExactGrid::image(8, 3), 700, 3), 1e-5, "plain 3D");
  EXPECT_EQ(exact_matrix_bytes(g), 901u * (17 * 17 + 1) * 8);
}

TEST(DenseExact, Seed001CgThroughTheStoredMatrixMatchesTheDoubleTwin) {
  RADSTREAM_REQUIRE_IMPATIENT_DATA("64x64x1");
  const ExactInputs in = load_impatient((test::impatient_data_dir() / "64x64x1").string());
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.iterations = 8;
  o.lambda = 1e-2;
  const auto ref = exact_cg_reference(in.model, in.kdata.data(), 8, 1e-2);
  const auto stored = exact_reconstruct(in.model, in.kdata, 1, o);
  ASSERT_TRUE(stored.matrix);
  const double nrmse = rel_err(stored.image, ref);
  EXPECT_LE(nrmse, 1e-4);
  o.matrix_limit_mb = 100;  // 124 MB does not fit: on the fly
  const auto fly = exact_reconstruct(in.model, in.kdata, 1, o);
  EXPECT_FALSE(fly.matrix);
  EXPECT_LE(rel_err(fly.image, ref), 1e-4);
  std::cout << "seed 001 CG on the host: stored matrix NRMSE " << nrmse << " (matrix " << stored.matrix_ms
            << " ms, CG " << stored.cg_ms << " ms); on the fly " << rel_err(fly.image, ref) << " (CG "
            << fly.cg_ms << " ms)\n";
}
