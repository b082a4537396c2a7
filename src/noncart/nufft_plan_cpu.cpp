#include "noncart/nufft_plan_cpu.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace radstream {

NufftPlanCpu::NufftPlanCpu(int dims, std::array<int, 3> grid, const NufftKernel& kernel, std::size_t capacity)
    : dims_(dims), width_(kernel.width), capacity_(capacity) {
  if (dims < 1 || dims > 3) throw ConfigError(fmt::format("nufft plan: dims = {} must be 1, 2 or 3", dims));
  for (int a = 0; a < dims; ++a) {
    if (grid[a] < 2 || grid[a] % 2)
      throw ConfigError(fmt::format("nufft plan: grid extent {} on axis {} must be even and >= 2", grid[a], a));
    grid_[a] = grid[a];
    grid_size_ *= std::size_t(grid[a]);
  }
  lut_ = std::make_unique<KaiserBesselLut>(kernel.width, kernel.oversampling, kernel.lut_resolution);
  for (int a = 0; a < dims; ++a) {
    w_[a] = HostBuffer<float>(Extents{capacity, std::size_t(width_)});
    idx_[a] = HostBuffer<int>(Extents{capacity, std::size_t(width_)});
  }
}

void NufftPlanCpu::set_points(const float* traj, std::size_t n) {
  if (n > capacity_)
    throw InputError(fmt::format("nufft plan: {} points exceed the planned capacity {}", n, capacity_));
  n_ = n;
  const int W = width_, D = dims_;
  const float half = 0.5f * float(W);
  const KaiserBesselLut& lut = *lut_;
  int stride[3] = {1, grid_[0], grid_[0] * grid_[1]};
#pragma omp parallel for schedule(static)
  for (long j = 0; j < long(n); ++j) {
    for (int axis = 0; axis < D; ++axis) {
      const int G = grid_[axis];
      const float u = traj[std::size_t(D) * j + axis] * float(G) + 0.5f * float(G);
      const bool valid = std::isfinite(u) && std::fabs(u) < 1e6f;
      const int m0 = valid ? int(std::floor(u - half)) + 1 : 0;
      float* w = w_[axis].data() + j * W;
      int* idx = idx_[axis].data() + j * W;
      for (int a = 0; a < W; ++a) {
        const int m = m0 + a;
        w[a] = valid ? lut(float(m) - u) : 0.f;
        idx[a] = (((m % G) + G) % G) * stride[axis];
      }
    }
  }
}

void NufftPlanCpu::spread(const cfloat* samples, cfloat* grids, int batch) const {
  const int W = width_, D = dims_;
  const long n = long(n_);
  const std::size_t cells = grid_size_;
  const float one = 1.f;
  const int zero = 0;
#pragma omp parallel for schedule(dynamic, 1)
  for (long c = 0; c < long(batch); ++c) {
    cfloat* grid = grids + c * cells;
    std::memset(static_cast<void*>(grid), 0, cells * sizeof(cfloat));
    const cfloat* d = samples + c * n;
    for (long j = 0; j < n; ++j) {
      const cfloat v = d[j];
      const float* wx = w_[0].data() + j * W;
      const int* ix = idx_[0].data() + j * W;
      const int Wy = D > 1 ? W : 1, Wz = D > 2 ? W : 1;
      const float* wy = D > 1 ? w_[1].data() + j * W : &one;
      const int* iy = D > 1 ? idx_[1].data() + j * W : &zero;
      const float* wz = D > 2 ? w_[2].data() + j * W : &one;
      const int* iz = D > 2 ? idx_[2].data() + j * W : &zero;
      for (int e = 0; e < Wz; ++e)
        for (int a = 0; a < Wy; ++a) {
          cfloat* row = grid + iz[e] + iy[a];
          const float wza = wz[e] * wy[a];
          const float vr = v.real() * wza, vi = v.imag() * wza;
          for (int b = 0; b < W; ++b) {
            float* cell = reinterpret_cast<float*>(row + ix[b]);
            cell[0] += vr * wx[b];
            cell[1] += vi * wx[b];
          }
        }
    }
  }
}

void NufftPlanCpu::interp(const cfloat* grids, cfloat* samples, int batch) const {
  const int W = width_, D = dims_;
  const long n = long(n_);
  const std::size_t cells = grid_size_;
  const float one = 1.f;
  const int zero = 0;
#pragma omp parallel for schedule(static)
  for (long j = 0; j < n; ++j) {
    const float* wx = w_[0].data() + j * W;
    const int* ix = idx_[0].data() + j * W;
    const int Wy = D > 1 ? W : 1, Wz = D > 2 ? W : 1;
    const float* wy = D > 1 ? w_[1].data() + j * W : &one;
    const int* iy = D > 1 ? idx_[1].data() + j * W : &zero;
    const float* wz = D > 2 ? w_[2].data() + j * W : &one;
    const int* iz = D > 2 ? idx_[2].data() + j * W : &zero;
    for (int c = 0; c < batch; ++c) {
      const cfloat* grid = grids + c * cells;
      float sr = 0.f, si = 0.f;
      for (int e = 0; e < Wz; ++e)
        for (int a = 0; a < Wy; ++a) {
          const cfloat* row = grid + iz[e] + iy[a];
          float rr = 0.f, ri = 0.f;
          for (int b = 0; b < W; ++b) {
            const cfloat g = row[ix[b]];
            rr += g.real() * wx[b];
            ri += g.imag() * wx[b];
          }
          const float wza = wz[e] * wy[a];
          sr += rr * wza;
          si += ri * wza;
        }
      samples[c * n + j] = cfloat(sr, si);
    }
  }
}

}  // namespace radstream
