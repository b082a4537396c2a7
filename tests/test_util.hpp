// Helpers shared by the tests: running commands, temporary folders, the optional references (BART, real
// data).
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/trajectory.hpp"
#include "sim/simulator.hpp"

namespace radstream::test {

// Relative l2 error of complex images, in double: ||a - b|| / ||b||.
// (A + lambda I) x = b, dense, Gaussian elimination with partial pivoting, in double.
inline std::vector<std::complex<double>> dense_solve(std::vector<std::complex<double>> a, std::size_t n,
                                                     double lambda, std::vector<std::complex<double>> b) {
  for (std::size_t i = 0; i < n; ++i) a[i * n + i] += lambda;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t piv = k;
    for (std::size_t i = k + 1; i < n; ++i)
      if (std::abs(a[i * n + k]) > std::abs(a[piv * n + k])) piv = i;
    for (std::size_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[piv * n + j]);
    std::swap(b[k], b[piv]);
    for (std::size_t i = k + 1; i < n; ++i) {
      const std::complex<double> f = a[i * n + k] / a[k * n + k];
      for (std::size_t j = k; j < n; ++j) a[i * n + j] -= f * a[k * n + j];
      b[i] -= f * b[k];
    }
  }
  std::vector<std::complex<double>> x(n);
  for (std::size_t i = n; i-- > 0;) {
    std::complex<double> s = b[i];
    for (std::size_t j = i + 1; j < n; ++j) s -= a[i * n + j] * x[j];
    x[i] = s / a[i * n + i];
  }
  return x;
}

// The simulator's phantom at a small size (the coil-map tests' 64^2, 4 coils, SNR 30).
inline SimParams phantom_sim(int matrix = 64, int coils = 4, double snr = 30) {
  SimParams s;
  s.matrix = matrix;
  s.coils = coils;
  s.snr = snr;
  return s;
}

// A stack of stars of the simulator's 3D phantom: `partitions` kz partitions, centre-out.
inline SimParams stack_sim(int matrix, int partitions, int coils, double snr = 0) {
  SimParams s = phantom_sim(matrix, coils, snr);
  s.partitions = partitions;
  s.partition_order = "centre-out";
  return s;
}

inline double rel_error(const std::vector<std::complex<float>>& a,
                        const std::vector<std::complex<float>>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(std::complex<double>(a[i]) - std::complex<double>(b[i]));
    den += std::norm(std::complex<double>(b[i]));
  }
  return std::sqrt(num / den);
}

// n complex values with independent standard normal parts (a fixed seed: reproducible).
inline std::vector<std::complex<float>> random_complex(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<std::complex<float>> v(n);
  for (auto& c : v) c = std::complex<float>(d(rng), d(rng));
  return v;
}

// Golden-angle spokes [spokes][samples][2] in cycles per pixel (the stream's default scheme).
inline std::vector<float> golden_trajectory(int spokes, int samples) {
  AngleSpec a;
  std::vector<float> t(std::size_t(spokes) * samples * 2);
  for (int s = 0; s < spokes; ++s)
    spoke_coordinates(a.angle(s), samples,
                      std::span<float>(t.data() + std::size_t(s) * samples * 2, samples * 2));
  return t;
}

// Smooth synthetic coil maps [coils][N][N]: coil c a Gaussian bump near the edge at angle 2 pi c / coils,
// with its own phase ramp (for operator tests; the simulator has its own analytic maps).
inline std::vector<std::complex<float>> smooth_coil_maps(int N, int coils) {
  std::vector<std::complex<float>> m(std::size_t(coils) * N * N);
  for (int c = 0; c < coils; ++c) {
    const double a = 2 * M_PI * c / coils, cx = 0.4 * N * std::cos(a), cy = 0.4 * N * std::sin(a);
    for (int y = 0; y < N; ++y)
      for (int x = 0; x < N; ++x) {
        const double dx = x - N / 2 - cx, dy = y - N / 2 - cy;
        m[(std::size_t(c) * N + y) * N + x] = std::complex<float>(
            std::polar(std::exp(-(dx * dx + dy * dy) / (0.5 * N * N)), 0.02 * (c + 1) * (x - y) + c));
      }
  }
  return m;
}

// A smooth off-resonance map [N][N] in Hz (a bump of up to peak_hz and a linear ramp) and readout times
// [spokes] [samples] from t0 in steps of dt (s): the field-corrected operators' test case.
inline std::vector<float> smooth_field_map(int N, double peak_hz) {
  std::vector<float> fm(std::size_t(N) * N);
  for (int y = 0; y < N; ++y)
    for (int x = 0; x < N; ++x) {
      const double u = (x - N / 2) * 2.0 / N, v = (y - N / 2) * 2.0 / N;
      fm[std::size_t(y) * N + x] =
          float(peak_hz * std::exp(-((u - 0.2) * (u - 0.2) + v * v) / 0.1) - 0.25 * peak_hz * v);
    }
  return fm;
}
inline std::vector<float> readout_times(int spokes, int samples, double t0, double dt) {
  std::vector<float> t(std::size_t(spokes) * samples);
  for (std::size_t j = 0; j < t.size(); ++j) t[j] = float(t0 + dt * double(j % std::size_t(samples)));
  return t;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), int(buf.size()), p)) r.output += buf.data();
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A fresh temporary folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("radstream_test_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The program the tests run: the build's, or $RADSTREAM_BIN (the GPU machine's wrapper that starts the
// carried binary with its libraries).
inline std::string radstream_binary() {
  const char* e = std::getenv("RADSTREAM_BIN");
  return e && *e ? std::string(e) : std::string(RADSTREAM_BIN);
}

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && std::string(v) == "1";
}

// True when `bart` runs. When it does not: the test skips with the reason, or fails if
// RADSTREAM_REQUIRE_BART=1 (CI sets it, so a reference test cannot pass by skipping).
inline bool bart_available() {
  return run_command("bart version").exit_code == 0;
}

#define RADSTREAM_REQUIRE_BART()                                                                    \
  do {                                                                                              \
    if (!radstream::test::bart_available()) {                                                       \
      if (radstream::test::env_flag("RADSTREAM_REQUIRE_BART")) FAIL() << "bart is not installed";   \
      GTEST_SKIP() << "bart is not installed (apt-get install bart); this reference test needs it"; \
    }                                                                                               \
  } while (0)

// Runs `bart args` in dir; a failure fails the calling test with BART's output.
inline void bart(const TempDir& dir, const std::string& args) {
  const auto r = run_command("cd " + dir.path().string() + " && bart " + args);
  ASSERT_EQ(r.exit_code, 0) << "bart " << args << "\n" << r.output;
}

// A real scanner data set: shipped in tests/data (the cardiac set, MIT), else beside the project
// (../shared/data/real, absent from a user's clone).
inline std::filesystem::path real_data(const std::string& set) {
  const std::filesystem::path shipped = std::filesystem::path(RADSTREAM_TEST_DATA) / set;
  return std::filesystem::exists(shipped) ? shipped : std::filesystem::path(RADSTREAM_REAL_DATA) / set;
}

#define RADSTREAM_REQUIRE_REAL_DATA(sub)                                                                   \
  do {                                                                                                     \
    if (!std::filesystem::exists(radstream::test::real_data(sub)))                                         \
      GTEST_SKIP() << "real data " << radstream::test::real_data(sub).string()                             \
                   << " is absent (not shipped in tests/data; it lives in ../shared, beside the project)"; \
  } while (0)

// The IMPATIENT example data beside the project (../shared/data/impatient), absent from a user's clone.
// RADSTREAM_IMPATIENT_DIR overrides it (a GPU machine that has the data elsewhere).
inline std::filesystem::path impatient_data_dir() {
  if (const char* d = std::getenv("RADSTREAM_IMPATIENT_DIR")) return d;
  return RADSTREAM_IMPATIENT_DATA;
}

#define RADSTREAM_REQUIRE_IMPATIENT_DATA(sub)                                                       \
  do {                                                                                              \
    if (!std::filesystem::exists(radstream::test::impatient_data_dir() / (sub)))                    \
      GTEST_SKIP() << "IMPATIENT data " << (radstream::test::impatient_data_dir() / (sub)).string() \
                   << " is absent (it lives in ../shared, beside the project, not in a clone)";     \
  } while (0)

}  // namespace radstream::test
