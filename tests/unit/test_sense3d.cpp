// CG-SENSE in 3D on the CPU (SenseOperator3dCpu): the operator's adjoint test, and the 3D Shepp-Logan
// phantom (band-limited to the ball both trajectories cover) recovered from k-space computed by the exact
// NUDFT in double (no NUFFT in the data) on a 3D radial kooshball and on a stack of stars, with smooth coil
// maps. The GPU twin's parity is in
// tests/gpu/test_nufft_cuda3d.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "core/math.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/sense_operator_3d.hpp"
#include "sense3d_test_util.hpp"
#include "sim/nudft.hpp"
#include "test_util.hpp"

using namespace radstream;
using namespace radstream::sense3d;

TEST(Sense3d, TheOperatorIsAdjointOnTheCpu) {
  const std::array<int, 3> N{12, 10, 8};
  const auto traj = kooshball(60, 16);
  SenseOperator3dCpu op(N, 3, traj.size() / 3, {6, 2.0, 4096});
  const auto maps = smooth_maps(N, 3);
  op.set_maps(maps.data());
  op.set_points(traj.data());
  const AdjointCheck c = check_adjoint(op, 5);
  std::printf("3D SENSE adjoint test: %.2e\n", c.relative_error);
  EXPECT_LE(c.relative_error, 1e-5);
}

TEST(Sense3d, CgSenseRecoversThePhantomFromExactKspace) {
  const int n = 12, coils = 4;
  const std::array<int, 3> N{n, n, n};
  const auto truth = bandlimited_phantom(n, 0.45);
  const auto maps = smooth_maps(N, coils);
  for (const auto& [name, traj] :
       {std::pair<std::string, std::vector<float>>{"kooshball", kooshball(400, 24)},
        {"stack of stars", stack_of_stars(36, 24, n)}}) {
    const std::size_t points = traj.size() / 3;
    const auto y = exact_data(traj, truth, maps, N, coils);
    SenseOperator3dCpu op(N, coils, points, {6, 2.0, 4096});
    op.set_maps(maps.data());
    op.set_points(traj.data());
    std::vector<cfloat> b(truth.size()), x(truth.size());
    op.adjoint(y.data(), b.data());
    auto ops = make_vector_ops_cpu();
    ConjugateGradient cg(truth.size(), *ops);
    double e[3];
    const int its[3] = {5, 50, 200};
    for (int i = 0; i < 3; ++i) {
      CgOptions o;
      o.max_iterations = its[i];
      cg.solve(op, b.data(), x.data(), o, false);
      e[i] = test::rel_error(x, truth);
    }
    std::printf(
        "3D CG-SENSE, %s (%zu points x %d coils, 12^3): error to the truth %.3g after 5, %.3g after 50, "
        "%.3g after 200\n",
        name.c_str(), points, coils, e[0], e[1], e[2]);
    EXPECT_LT(e[1], 0.5 * e[0]) << name;
    EXPECT_LT(e[2], 0.02) << name;
  }
}
