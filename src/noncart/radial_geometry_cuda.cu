// The spoke lines and their angular shares on the GPU, once per frame for every stage of the frame (one
// block: every spoke's direction mod pi in shared memory, then each spoke's share of angle, half the gaps to
// its neighbours, ties broken by index as SpokeLineSet::fit does on the CPU).
#include "core/math.hpp"
#include "gpu/cuda_check.cuh"
#include "noncart/radial_geometry.hpp"

namespace radstream {
namespace {

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) fit_lines_and_shares(const float* __restrict__ traj, int spokes,
                                                                 int samples, SpokeLine* __restrict__ lines) {
  extern __shared__ float folded[];
  for (int p = threadIdx.x; p < spokes; p += blockDim.x) {
    const SpokeLine l = fit_spoke_line(traj + size_t(p) * samples * 2, samples);
    lines[p] = l;
    folded[p] = float(fmod(double(l.theta) + 2 * kPi, kPi));
  }
  __syncthreads();
  const float pi = float(kPi);
  for (int p = threadIdx.x; p < spokes; p += blockDim.x) {
    const float a = folded[p];
    float below = -1e9f, above = 1e9f;
    for (int q = 0; q < spokes; ++q) {
      const float fq = folded[q];
      const bool after = fq > a || (fq == a && q > p);
      const float b = after ? fq : fq + pi;
      if (q != p) {
        above = fminf(above, b);
        below = fmaxf(below, b - pi);
      }
    }
    lines[p].weight = spokes == 1 ? pi : float(0.5 * (double(above) - double(below)));
  }
}

}  // namespace

void fit_spoke_lines_cuda(const float* d_traj, int spokes, int samples, SpokeLine* d_lines,
                          gpu::StreamRef stream) {
  if (spokes < 1) return;
  if (spokes > kMaxDeviceSpokes)
    throw InputError("spoke lines: " + std::to_string(spokes) + " spokes per frame exceed the GPU's " +
                     std::to_string(kMaxDeviceSpokes));
  fit_lines_and_shares<<<1, kThreads, std::size_t(spokes) * sizeof(float), stream>>>(d_traj, spokes, samples,
                                                                                     d_lines);
  CUDA_CHECK_LAUNCH("fit_lines_and_shares");
}

}  // namespace radstream
