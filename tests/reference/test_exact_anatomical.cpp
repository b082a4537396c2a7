// Seed 000's anatomically constrained reconstruction: first differences across the anatomy's boundaries are
// left out of C. The CSR drops exactly those rows (a piecewise-constant image has C x = 0), the phantom's
// labels mark partial-volume voxels as regions of their own, and on a reduced 3D case (24^3, the 128^3 case's
// sampling ratio) CG with the prior beats plain CG and the density-compensated adjoint against the true
// phantom.
#include <gtest/gtest.h>

#include <set>

#include "exact/exact_recon.hpp"
#include "io/exact_inputs.hpp"
#include "linalg/csr_matrix.hpp"
#include "sim/phantom3d.hpp"

using namespace radstream;

TEST(ExactAnatomical, DifferencesAcrossRegionsAreLeftOutOfC) {
  const std::array<int, 3> n{1, 3, 4};
  std::vector<int> regions(12);
  for (int v = 0; v < 12; ++v) regions[std::size_t(v)] = (v % 4) < 2 ? 0 : 1;  // columns 0-1 | 2-3
  const CsrMatrix plain = finite_difference_csr(n), anat = finite_difference_csr(n, &regions);
  EXPECT_EQ(plain.rows, 3 * 3 + 2 * 4);  // along x: 3 per row, along y: 2 per column
  EXPECT_EQ(anat.rows, plain.rows - 3);  // the three x differences between columns 1 and 2
  std::vector<cfloat> x(12), y(std::size_t(anat.rows));
  for (int v = 0; v < 12; ++v) x[std::size_t(v)] = regions[std::size_t(v)] ? cfloat(5, -1) : cfloat(2, 0);
  CsrOperatorCpu c(anat, Extents{1, 3, 4});
  c.forward(x.data(), y.data());
  for (const auto& v : y) EXPECT_EQ(v, cfloat(0));
  std::vector<int> short_labels(5);
  EXPECT_THROW(finite_difference_csr(n, &short_labels), ConfigError);
}

TEST(ExactAnatomical, PhantomLabelsMarkPartialVolumesAsRegionsOfTheirOwn) {
  const int n = 24;
  const auto labels = region_labels_3d(shepp_logan_3d(), n);
  ASSERT_EQ(labels.size(), std::size_t(n) * n * n);
  std::set<int> whole;
  std::size_t boundary = 0;
  for (int v : labels) {
    if (v < 0)
      ++boundary;
    else
      whole.insert(v);
  }
  EXPECT_GT(boundary, 0u);
  EXPECT_LT(boundary, labels.size() / 2);
  EXPECT_GE(whole.size(), 4u);  // outside, the skull, the brain, inner ellipsoids
  EXPECT_EQ(labels[0], 0);      // a corner lies outside every ellipsoid
  const std::size_t centre = (std::size_t(n / 2) * n + n / 2) * n + n / 2;
  EXPECT_GT(labels[centre], 0);  // the centre lies inside the head
}

TEST(ExactAnatomical, PriorBeatsPlainCgAndTheDensityCompensatedAdjoint) {
  const int n = 24, spokes = 78, samples = 25;  // 2,156 x (24/128)^2 spokes: the 128^3 case's angular density
  const Phantom3dCase c = phantom_3d_case(n, spokes, samples, 0.0, 7);
  const ExactModel m = exact_model_3d(c.k, n);
  std::vector<cfloat> dcf = c.data;
  for (std::size_t i = 0; i < dcf.size(); ++i)
    dcf[i] *= c.k[i][0] * c.k[i][0] + c.k[i][1] * c.k[i][1] + c.k[i][2] * c.k[i][2];
  ExactReconOptions o;
  const double adjoint = score_image(exact_reconstruct(m, dcf, 1, o).image, c.truth, true).percent_error;
  o.method = ExactMethod::Cg;
  o.iterations = 60;
  o.lambda = 1e-2;
  const double plain = score_image(exact_reconstruct(m, c.data, 1, o).image, c.truth, false).percent_error;
  o.regions = region_labels_3d(shepp_logan_3d(), n);
  o.lambda = 10;
  const double anat = score_image(exact_reconstruct(m, c.data, 1, o).image, c.truth, false).percent_error;
  std::printf("24^3: DCF adjoint %.1f %%, CG %.1f %%, CG with the anatomical prior %.1f %% (ratio %.2f)\n",
              adjoint, plain, anat, anat / adjoint);
  EXPECT_LT(anat, 0.7 * plain);
  EXPECT_LT(anat / adjoint, 0.5);
  o.regions.resize(5);
  EXPECT_THROW(exact_reconstruct(m, c.data, 1, o), InputError);
}
