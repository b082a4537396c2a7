#include "noncart/nufft_operator_cpu.hpp"

#include <fmt/format.h>

#include <cstring>

#include "core/error.hpp"

namespace radstream {

namespace {

Extents image_extents(int dims, const std::array<int, 3>& m, int batch) {
  if (dims == 3) return Extents{std::size_t(batch), std::size_t(m[2]), std::size_t(m[1]), std::size_t(m[0])};
  if (dims == 2) return Extents{std::size_t(batch), std::size_t(m[1]), std::size_t(m[0])};
  return Extents{std::size_t(batch), std::size_t(m[0])};
}

std::array<int, 3> grid_of(int dims, const std::array<int, 3>& m, double sigma) {
  std::array<int, 3> g{1, 1, 1};
  for (int a = 0; a < dims; ++a) {
    if (m[a] < 2 || m[a] % 2)
      throw ConfigError(fmt::format("nufft: image extent {} on axis {} must be even and >= 2", m[a], a));
    g[a] = oversampled_grid_size(m[a], sigma);
  }
  return g;
}

}  // namespace

NufftOperatorCpu::NufftOperatorCpu(int dims, std::array<int, 3> matrix, int batch, std::size_t points,
                                   const NufftKernel& kernel, FftPlanner planner, int threads)
    : LinearOperator(image_extents(dims, matrix, batch), Extents{std::size_t(batch), points}, Location::Host),
      dims_(dims),
      batch_(batch),
      points_(points) {
  const auto grid = grid_of(dims, matrix, kernel.oversampling);
  for (int a = 0; a < dims; ++a) {
    matrix_[a] = matrix[a];
    image_size_ *= std::size_t(matrix[a]);
  }
  plan_ = std::make_unique<NufftPlanCpu>(dims, grid, kernel, points);
  for (int a = 0; a < dims; ++a) apod_[a] = make_axis_apodization(matrix[a], grid[a], plan_->lut());
  std::vector<int> fft_dims;
  for (int a = dims - 1; a >= 0; --a) fft_dims.push_back(grid[a]);
  fwd_ = FftwPlan(fft_dims, batch, FftDirection::Forward, planner, threads);
  inv_ = FftwPlan(fft_dims, batch, FftDirection::Inverse, planner, threads);
  grids_ = HostBuffer<cfloat>(Extents{std::size_t(batch), plan_->grid_size()});
}

void NufftOperatorCpu::set_points(const float* traj) {
  plan_->set_points(traj, points_);
}

void NufftOperatorCpu::forward(const cfloat* x, cfloat* y) {
  if (plan_->points() != points_) throw InputError("nufft: set_points() has not been called");
  const auto& g = plan_->grid();
  const std::size_t cells = plan_->grid_size();
  std::memset(static_cast<void*>(grids_.data()), 0, grids_.size() * sizeof(cfloat));
  const int nz = dims_ > 2 ? matrix_[2] : 1, ny = dims_ > 1 ? matrix_[1] : 1, nx = matrix_[0];
  const float one = 1.f;
  const int zero = 0;
#pragma omp parallel for collapse(2) schedule(static)
  for (long c = 0; c < long(batch_); ++c)
    for (int z = 0; z < nz; ++z) {
      const float fz = dims_ > 2 ? apod_[2].factor[z] : one;
      const int sz = dims_ > 2 ? apod_[2].src[z] : zero;
      for (int yy = 0; yy < ny; ++yy) {
        const float fy = dims_ > 1 ? apod_[1].factor[yy] : one;
        const int sy = dims_ > 1 ? apod_[1].src[yy] : zero;
        const cfloat* src = x + c * image_size_ + (std::size_t(z) * ny + yy) * nx;
        cfloat* dst = grids_.data() + c * cells + (std::size_t(sz) * g[1] + sy) * g[0];
        const float fzy = fz * fy;
        for (int xx = 0; xx < nx; ++xx) dst[apod_[0].src[xx]] = src[xx] * (fzy * apod_[0].factor[xx]);
      }
    }
  fwd_.execute(grids_.data());
  plan_->interp(grids_.data(), y, batch_);
}

void NufftOperatorCpu::adjoint(const cfloat* y, cfloat* x) {
  if (plan_->points() != points_) throw InputError("nufft: set_points() has not been called");
  const auto& g = plan_->grid();
  const std::size_t cells = plan_->grid_size();
  plan_->spread(y, grids_.data(), batch_);
  inv_.execute(grids_.data());
  const int nz = dims_ > 2 ? matrix_[2] : 1, ny = dims_ > 1 ? matrix_[1] : 1, nx = matrix_[0];
#pragma omp parallel for collapse(2) schedule(static)
  for (long c = 0; c < long(batch_); ++c)
    for (int z = 0; z < nz; ++z) {
      const float fz = dims_ > 2 ? apod_[2].factor[z] : 1.f;
      const int sz = dims_ > 2 ? apod_[2].src[z] : 0;
      for (int yy = 0; yy < ny; ++yy) {
        const float fy = dims_ > 1 ? apod_[1].factor[yy] : 1.f;
        const int sy = dims_ > 1 ? apod_[1].src[yy] : 0;
        const cfloat* src = grids_.data() + c * cells + (std::size_t(sz) * g[1] + sy) * g[0];
        cfloat* dst = x + c * image_size_ + (std::size_t(z) * ny + yy) * nx;
        const float fzy = fz * fy;
        for (int xx = 0; xx < nx; ++xx) dst[xx] = src[apod_[0].src[xx]] * (fzy * apod_[0].factor[xx]);
      }
    }
}

}  // namespace radstream
