// Density compensation weights on the GPU, the same as the CPU's (density_weights.cpp): one thread per
// half-spoke finds its angular neighbours (Voronoi), then one thread per sample computes its weight. Radial
// spokes are monotone along their index, so a sample's radial neighbours are n - 1 and n + 1.
#include <cmath>

#include "core/math.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/dependent_launch.cuh"
#include "noncart/density_weights.hpp"
#include "noncart/radial_geometry.hpp"
#include "noncart/ramp_weight.hpp"

namespace radstream {
namespace {

__device__ double half_angle(const float* traj, int S, int h) {
  const SpokeAxis a = spoke_axis(traj + size_t(h / 2) * S * 2, S);
  double th = atan2(a.dy, a.dx);
  if (th < 0) th += 2 * kPi;
  if (h % 2) th = fmod(th + kPi, 2 * kPi);
  return th;
}

// Angular width of each of the 2P half-spokes: half the gaps to the nearest directions on either side;
// directions that coincide share one width.
__global__ void half_spoke_widths(const float* __restrict__ traj, int P, int S, double* __restrict__ width) {
  const int h = blockIdx.x * blockDim.x + threadIdx.x;
  const int H = 2 * P;
  if (h >= H) return;
  const double th = half_angle(traj, S, h);
  constexpr double kSame = 1e-9;
  double prev = 2 * kPi, next = 2 * kPi;
  int same = 1;
  for (int o = 0; o < H; ++o) {
    if (o == h) continue;
    double d = half_angle(traj, S, o) - th;  // in (-2pi, 2pi)
    if (fabs(d) < kSame || fabs(fabs(d) - 2 * kPi) < kSame) {
      ++same;
      continue;
    }
    if (d < 0) d += 2 * kPi;
    next = fmin(next, d);
    prev = fmin(prev, 2 * kPi - d);
  }
  width[h] = (same == H) ? 2 * kPi / H : 0.5 * (prev + next) / same;
}

__global__ void sample_weights(DcfMethod method, const float* __restrict__ traj,
                               const double* __restrict__ width, int P, int S, float* __restrict__ w_out) {
  gpu::wait_for_previous();  // launched dependent: the trajectory (and widths) after the kernels before
  gpu::allow_dependents();
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= long(P) * S) return;
  const int p = int(j / S), n = int(j % S);
  const float* t = traj + size_t(p) * S * 2;
  if (is_ramp(method)) {
    w_out[j] = ramp_weight(method == DcfMethod::RampDc, t, S, n, P);
    return;
  }
  const SpokeAxis a = spoke_axis(t, S);
  double w = 1.0;
  if (method == DcfMethod::Voronoi) {
    auto along = [&](int m) { return t[2 * m] * a.dx + t[2 * m + 1] * a.dy; };
    const double s = along(n), r = fabs(s);
    const double tol = 1e-6 * a.spacing;
    if (r <= tol) {
      const double rn = n + 1 < S ? fabs(along(n + 1)) : a.spacing;
      w = kPi * 0.25 * rn * rn / P;
    } else {
      const int inward = s > 0 ? n - 1 : n + 1, outward = s > 0 ? n + 1 : n - 1;
      double r_in = 0.0;
      if (inward >= 0 && inward < S) {
        const double si = along(inward);
        r_in = (si * s > 0 || fabs(si) <= tol) ? 0.5 * (r + fabs(si)) : 0.0;
      }
      const double r_out =
          (outward >= 0 && outward < S) ? 0.5 * (r + fabs(along(outward))) : r + 0.5 * a.spacing;
      w = 0.5 * width[2 * p + (s < 0 ? 1 : 0)] * (r_out * r_out - r_in * r_in);
    }
  }
  w_out[j] = float(w);
}

}  // namespace

void compute_density_weights_cuda(DcfMethod method, const float* d_traj, int spokes, int samples,
                                  double* d_width, float* d_w, gpu::StreamRef stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (method == DcfMethod::Voronoi) {
    const int H = 2 * spokes;
    half_spoke_widths<<<(H + 127) / 128, 128, 0, s>>>(d_traj, spokes, samples, d_width);
    CUDA_CHECK_LAUNCH("half_spoke_widths");
  }
  const long n = long(spokes) * samples;
  if (n == 0) return;
  gpu::launch_dependent("sample_weights", sample_weights, unsigned((n + 255) / 256), 256, 0, s, method,
                        d_traj, static_cast<const double*>(d_width), spokes, samples, d_w);
}

}  // namespace radstream
