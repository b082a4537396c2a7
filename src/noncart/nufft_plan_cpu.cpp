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
      throw ConfigError(
          fmt::format("nufft plan: grid extent {} on axis {} must be even and >= 2", grid[a], a));
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

NufftPlanCpu::Taps NufftPlanCpu::taps(std::size_t j) const {
  static constexpr float kOne = 1.f;  // the weight and index of an axis the plan does not have
  static constexpr int kZero = 0;
  Taps t;
  for (int a = 0; a < 3; ++a) {
    const bool has = a < dims_;
    t.w[a] = has ? w_[a].data() + j * width_ : &kOne;
    t.i[a] = has ? idx_[a].data() + j * width_ : &kZero;
    t.width[a] = has ? width_ : 1;
  }
  return t;
}

void NufftPlanCpu::spread(const cfloat* samples, cfloat* grids, int batch) const {
  const int W = width_;
  const long n = long(n_);
  const std::size_t cells = grid_size_;
#pragma omp parallel for schedule(dynamic, 1)
  for (long c = 0; c < long(batch); ++c) {
    cfloat* grid = grids + c * cells;
    std::memset(static_cast<void*>(grid), 0, cells * sizeof(cfloat));
    const cfloat* d = samples + c * n;
    for (long j = 0; j < n; ++j) {
      const cfloat v = d[j];
      const Taps t = taps(j);
      const float *wx = t.w[0], *wy = t.w[1], *wz = t.w[2];
      const int *ix = t.i[0], *iy = t.i[1], *iz = t.i[2];
      const int Wy = t.width[1], Wz = t.width[2];
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
  const int W = width_;
  const long n = long(n_);
  const std::size_t cells = grid_size_;
#pragma omp parallel for schedule(static)
  for (long j = 0; j < n; ++j) {
    const Taps t = taps(j);
    const float *wx = t.w[0], *wy = t.w[1], *wz = t.w[2];
    const int *ix = t.i[0], *iy = t.i[1], *iz = t.i[2];
    const int Wy = t.width[1], Wz = t.width[2];
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
