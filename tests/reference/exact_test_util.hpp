// Random exact models for the exact-path tests (CPU and GPU): trajectories inside |k| <= 0.5 cycles per
// pixel, symmetric about k = 0 on request, field maps and gradients of the seed 001 case's size, and the
// relative error against a double-precision result.
#pragma once
#include <complex>
#include <random>
#include <vector>

#include "core/exact_model.hpp"

namespace radstream::exacttest {

inline ExactModel random_model(const ExactGrid& grid, std::size_t M, unsigned seed, bool symmetric = false) {
  ExactModel m;
  m.grid = grid;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (int a = 0; a < 3; ++a) {
    if (grid.n[a] <= 1) continue;
    m.k[a].resize(M);
  }
  for (std::size_t i = 0; i < M; ++i)
    for (int a = 0; a < 3; ++a) {
      if (m.k[a].empty()) continue;
      m.k[a][i] = (symmetric && i % 2 == 1) ? -m.k[a][i - 1] : u(rng);
    }
  return m;
}

// Off-resonance up to +-40 Hz, gradients up to +-60 Hz across a voxel, times 10..30 ms (seed 001's ranges).
inline void add_field(ExactModel& m, unsigned seed, bool gradients) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> f(-40.0f, 40.0f), g(-60.0f, 60.0f), t(0.010f, 0.030f);
  const std::size_t M = m.samples(), V = m.voxels();
  m.t.resize(M);
  for (auto& v : m.t) v = t(rng);
  m.fm.resize(V);
  for (auto& v : m.fm) v = f(rng);
  if (gradients)
    for (auto& a : m.g) {
      a.resize(V);
      for (auto& v : a) v = g(rng);
    }
}

template <class T>
std::vector<std::complex<T>> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<T> d(0, 1);
  std::vector<std::complex<T>> v(n);
  for (auto& x : v) x = {d(rng), d(rng)};
  return v;
}

template <class A, class B>
double rel_err(const std::vector<std::complex<A>>& got, const std::vector<std::complex<B>>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(std::complex<double>(got[i]) - std::complex<double>(ref[i]));
    den += std::norm(std::complex<double>(ref[i]));
  }
  return std::sqrt(num / den);
}

template <class T>
std::vector<std::complex<double>> to_double(const std::vector<std::complex<T>>& v) {
  return {v.begin(), v.end()};
}

}  // namespace radstream::exacttest
