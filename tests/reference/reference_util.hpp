// Shared by the reference tests that run `radstream recon` in a folder and compare .cfl images.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "sim/coil_maps.hpp"
#include "test_util.hpp"

namespace radstream::reftest {

// `radstream recon --backend cpu ARGS` in the folder; the test fails unless it exits 0.
inline void radstream_recon(const test::TempDir& dir, const std::string& args) {
  const auto r = test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() +
                                   " recon --backend cpu " + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// The magnitude of a .cfl image.
inline std::vector<float> mag(const std::string& path) {
  return magnitude(read_cfl(path).data);
}

// The simulator's analytic maps on the reconstruction's pixel grid, [coils][N][N]; unit_rss: divided by their
// root-sum-of-squares per pixel (what any estimate from the data can recover: the data fix S_c rho, not how
// a pixel's scale splits between the maps and the image).
inline HostBuffer<cfloat> analytic_maps(int coils, int N, bool unit_rss = false) {
  const CoilMaps cm(coils);
  HostBuffer<cfloat> m(Extents{std::size_t(coils), std::size_t(N), std::size_t(N)});
  for (int c = 0; c < coils; ++c)
    for (int y = 0; y < N; ++y)
      for (int x = 0; x < N; ++x)
        m[(std::size_t(c) * N + y) * N + x] =
            cfloat(cm.value(c, (x - N / 2) * 2.0 / N, (y - N / 2) * 2.0 / N));
  if (unit_rss) {
    const std::size_t P = std::size_t(N) * N;
    for (std::size_t p = 0; p < P; ++p) {
      double s = 0;
      for (int c = 0; c < coils; ++c) s += std::norm(m[c * P + p]);
      for (int c = 0; c < coils; ++c) m[c * P + p] *= float(1 / std::sqrt(s));
    }
  }
  return m;
}

}  // namespace radstream::reftest
