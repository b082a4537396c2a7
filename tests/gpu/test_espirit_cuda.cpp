// ESPIRiT's eigen-problems on the GPU (recon/espirit_cuda.cu) against the CPU twin (LAPACK per pixel), from
// one subspace: the real cardiac data (12 coils, 25 spokes) and the simulated phantom (8 coils), with and
// without the support weight; and a CG-SENSE chain on the CUDA backend estimating its own maps on the GPU.
// Skips without a GPU; RADSTREAM_REQUIRE_GPU=1 makes that a failure.
#include <algorithm>
#include <cmath>

#include "gpu/gpu_test_util.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/espirit.hpp"

using namespace radstream;
using namespace radstream::gputest;

namespace {

struct Parity {
  double maps_error = 0;          // relative error of the CUDA maps against the CPU maps
  double eigen_max_diff = 0;      // largest |lambda_cuda - lambda_cpu|
  double worst_agreement = 1;     // smallest per-pixel |<a, b>| / (|a| |b|) where both are non-zero
  std::size_t zero_mismatch = 0;  // pixels zero on one backend only
};

Parity compare(const EspiritMaps& cpu, const EspiritMaps& cuda, int coils) {
  Parity r;
  const std::size_t P = cpu.eigenvalue.size();
  r.maps_error = rel_error(std::vector<cfloat>(cuda.maps.data(), cuda.maps.data() + cuda.maps.size()),
                           std::vector<cfloat>(cpu.maps.data(), cpu.maps.data() + cpu.maps.size()));
  for (std::size_t q = 0; q < P; ++q) {
    r.eigen_max_diff = std::max(r.eigen_max_diff, double(std::abs(cpu.eigenvalue[q] - cuda.eigenvalue[q])));
    std::complex<double> dot = 0;
    double na = 0, nb = 0;
    for (int c = 0; c < coils; ++c) {
      const std::complex<double> a(cpu.maps[c * P + q]), b(cuda.maps[c * P + q]);
      dot += std::conj(a) * b;
      na += std::norm(a);
      nb += std::norm(b);
    }
    if (na > 0 && nb > 0)
      r.worst_agreement = std::min(r.worst_agreement, std::abs(dot) / std::sqrt(na * nb));
    else if ((na > 1e-12) != (nb > 1e-12))
      ++r.zero_mismatch;
  }
  return r;
}

void expect_parity(const Frame& f, int N, bool mask, const char* what) {
  EspiritParams p;
  p.grid = 48;
  p.mask = mask;
  const EspiritSubspace s = espirit_subspace(f.data.view(), f.traj.view(), N, p);
  const EspiritMaps cpu = espirit_maps_cpu(s, p), cuda = espirit_maps_cuda(s, p);
  const Parity r = compare(cpu, cuda, s.coils);
  std::printf(
      "espirit %s (%d coils, %d kept, mask %s): maps CUDA vs CPU %.3g, eigenvalue max diff %.3g, "
      "worst pixel agreement %.8f, zero on one side only %zu\n",
      what, s.coils, s.kept, mask ? "on" : "off", r.maps_error, r.eigen_max_diff, r.worst_agreement,
      r.zero_mismatch);
  EXPECT_LE(r.maps_error, 1e-4) << what;
  EXPECT_LE(r.eigen_max_diff, 1e-5) << what;
  EXPECT_GE(r.worst_agreement, 0.9999) << what;
  EXPECT_EQ(r.zero_mismatch, 0u) << what;
}

}  // namespace

TEST(EspiritCuda, MapsOfTheRealCardiacDataMatchTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  RADSTREAM_REQUIRE_REAL_DATA("cardiac-25spokes-12coils");
  const auto src = test::real_data("cardiac-25spokes-12coils");
  const Frame f = frame_from_bart(read_cfl(src / "traj"), read_cfl(src / "ksp"), 256, "cardiac");
  expect_parity(f, 256, true, "cardiac");
  expect_parity(f, 256, false, "cardiac");
}

TEST(EspiritCuda, MapsOfThePhantomMatchTheCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  const Frame f = phantom_frame(128, 8, 30, 96);
  expect_parity(f, 128, true, "phantom");
}

TEST(EspiritCuda, ACudaChainEstimatesItsOwnMapsOnTheGpuAsTheCpuChainDoes) {
  RADSTREAM_REQUIRE_GPU();
  const Frame f = phantom_frame(128, 8, 30, 96);
  CoilMapEstimate est;
  const HostBuffer<cfloat> cpu = estimate_coil_maps(f.data.view(), f.traj.view(), 128, est);
  est.backend = Backend::Cuda;
  const HostBuffer<cfloat> cuda = estimate_coil_maps(f.data.view(), f.traj.view(), 128, est);
  const double e = rel_error(std::vector<cfloat>(cuda.data(), cuda.data() + cuda.size()),
                             std::vector<cfloat>(cpu.data(), cpu.data() + cpu.size()));
  std::printf("estimate_coil_maps on the CUDA backend vs the CPU: %.3g\n", e);
  EXPECT_LE(e, 1e-4);
}
