#include <cstring>

#include "exact/toeplitz_normal.hpp"

#include "core/error.hpp"

namespace radstream {

std::vector<int> toeplitz_dims(const ExactGrid& grid) {
  std::vector<int> dims;
  for (int a = 0; a < 3; ++a)
    if (grid.n[a] > 1) dims.push_back(2 * grid.n[a]);
  if (dims.empty())
    throw ConfigError("Toeplitz normal operator: a grid of one voxel has nothing to convolve");
  return dims;
}

namespace {

std::size_t product(const std::vector<int>& d) {
  std::size_t n = 1;
  for (int v : d) n *= std::size_t(v);
  return n;
}

// 2N-grid extents per axis (1 where n = 1).
std::array<std::size_t, 3> padded(const ExactGrid& g) {
  std::array<std::size_t, 3> p{};
  for (int a = 0; a < 3; ++a) p[a] = g.n[a] > 1 ? std::size_t(2 * g.n[a]) : 1;
  return p;
}

}  // namespace

ToeplitzNormalCpu::ToeplitzNormalCpu(std::shared_ptr<LinearOperator> op, const ExactGrid& grid,
                                     const cfloat* q)
    : LinearOperator(op->domain(), op->codomain(), Location::Host), op_(std::move(op)), grid_(grid) {
  const auto dims = toeplitz_dims(grid);
  const std::size_t L = product(dims);
  fwd_ = FftwPlan(dims, 1, FftDirection::Forward, FftPlanner::Estimate, 0);
  inv_ = FftwPlan(dims, 1, FftDirection::Inverse, FftPlanner::Estimate, 0);
  qhat_ = HostBuffer<cfloat>(Extents{L});
  pad_ = HostBuffer<cfloat>(Extents{L});
  // Circular layout: displacement s of axis a sits at (s mod 2n); q holds s = -n..n-1 at index s + n.
  const auto p = padded(grid);
  const auto qg = grid.q_grid();
  for (std::size_t j0 = 0; j0 < p[0]; ++j0)
    for (std::size_t j1 = 0; j1 < p[1]; ++j1)
      for (std::size_t j2 = 0; j2 < p[2]; ++j2) {
        const std::size_t s0 = grid.n[0] > 1 ? (j0 + grid.n[0]) % p[0] : 0;
        const std::size_t s1 = grid.n[1] > 1 ? (j1 + grid.n[1]) % p[1] : 0;
        const std::size_t s2 = grid.n[2] > 1 ? (j2 + grid.n[2]) % p[2] : 0;
        qhat_.data()[(j0 * p[1] + j1) * p[2] + j2] = q[(s0 * qg.n[1] + s1) * qg.n[2] + s2] / float(L);
      }
  fwd_.execute(qhat_.data());
}

void ToeplitzNormalCpu::normal(const cfloat* x, cfloat* z) {
  const auto p = padded(grid_);
  const std::size_t L = p[0] * p[1] * p[2];
  cfloat* b = pad_.data();
  std::memset(static_cast<void*>(b), 0, L * sizeof(cfloat));
  for (int i0 = 0; i0 < grid_.n[0]; ++i0)
    for (int i1 = 0; i1 < grid_.n[1]; ++i1)
      std::memcpy(static_cast<void*>(b + (i0 * p[1] + i1) * p[2]),
                  x + (std::size_t(i0) * grid_.n[1] + i1) * grid_.n[2], grid_.n[2] * sizeof(cfloat));
  fwd_.execute(b);
  const cfloat* qh = qhat_.data();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < L; ++i) b[i] *= qh[i];
  inv_.execute(b);
  for (int i0 = 0; i0 < grid_.n[0]; ++i0)
    for (int i1 = 0; i1 < grid_.n[1]; ++i1)
      std::memcpy(static_cast<void*>(z + (std::size_t(i0) * grid_.n[1] + i1) * grid_.n[2]),
                  b + (i0 * p[1] + i1) * p[2], grid_.n[2] * sizeof(cfloat));
}

}  // namespace radstream
