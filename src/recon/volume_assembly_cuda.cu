#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>

#include "core/error.hpp"
#include "fft/cufft_plan.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "recon/volume_assembly_cuda.hpp"

namespace radstream {
namespace {

__device__ inline float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// Each spoke of the window, with its partition's phase, into the kz-fastest buffer [coils][W][samples][P].
__global__ void place_spokes(const float2* __restrict__ raw, int R, const int* __restrict__ slot_of,
                             const std::uint16_t* __restrict__ part, const float2* __restrict__ pre,
                             float2* __restrict__ kz, int C, int W, int S, int P) {
  const long total = long(R) * C * S;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < total; i += long(gridDim.x) * blockDim.x) {
    const int s = int(i % S), c = int((i / S) % C), r = int(i / (long(S) * C));
    const int j = slot_of[r];
    if (j < 0) continue;
    const int p = part[r];
    kz[((long(c) * W + j) * S + s) * P + p] = cmul(pre[p], raw[(long(c) * R + r) * S + s]);
  }
}

constexpr int kTile = 32, kRows = 8;

// kz [M][P] -> frames [P][M] with each z position's phase: a transpose through shared memory, so that both
// the reads and the writes are coalesced. Blocks: x over tiles of M, y over tiles of P.
__global__ void split_positions(const float2* __restrict__ kz, const float2* __restrict__ post,
                                float2* __restrict__ frames, long M, int P) {
  __shared__ float2 tile[kTile][kTile + 1];
  const long m0 = long(blockIdx.x) * kTile;
  const int z0 = blockIdx.y * kTile;
  for (int i = threadIdx.y; i < kTile; i += kRows) {
    const long m = m0 + i;
    const int z = z0 + threadIdx.x;
    if (m < M && z < P) tile[i][threadIdx.x] = kz[m * P + z];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += kRows) {
    const int z = z0 + i;
    const long m = m0 + threadIdx.x;
    if (m < M && z < P) frames[long(z) * M + m] = cmul(post[z], tile[threadIdx.x][i]);
  }
}

// Each slot's trajectory: that of a spoke of its step.
__global__ void slot_trajectories(const float* __restrict__ raw_traj, const int* __restrict__ line_of,
                                  float* __restrict__ traj, int W, int S) {
  const long total = long(W) * S * 2;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < total; i += long(gridDim.x) * blockDim.x) {
    const int j = int(i / (long(S) * 2));
    traj[i] = raw_traj[long(line_of[j]) * S * 2 + i % (long(S) * 2)];
  }
}

int blocks_for(long n, int threads) {
  return int(std::min<long>((n + threads - 1) / threads, 65535L * 32));
}

}  // namespace

struct VolumeAssemblerCuda::Impl {
  Geometry plane;
  int P = 1;
  gpu::Stream stream;
  int raw_capacity = 0;
  DeviceBuffer<cfloat> raw, kz, frames, pre, post;
  DeviceBuffer<float> raw_traj, traj;
  DeviceBuffer<int> slot_of, line_of;
  DeviceBuffer<std::uint16_t> part;
  std::vector<int> h_line;
  VolumeLayout layout;
  std::vector<std::uint64_t> h_steps;
  std::vector<std::uint16_t> h_partitions;
  CufftPlan plan;
  std::size_t lines() const { return std::size_t(plane.coils) * plane.spokes * plane.samples; }
};

VolumeAssemblerCuda::VolumeAssemblerCuda(const Geometry& plane, int partitions, int device)
    : impl_(std::make_unique<Impl>()) {
  gpu::DeviceGuard on(device);
  Impl& d = *impl_;
  d.plane = plane;
  d.P = partitions;
  const std::size_t M = d.lines();
  d.kz = DeviceBuffer<cfloat>(Extents{M, std::size_t(partitions)});
  d.frames = DeviceBuffer<cfloat>(Extents{std::size_t(partitions), M});
  d.traj = DeviceBuffer<float>(Extents{std::size_t(plane.spokes), std::size_t(plane.samples), 2});
  d.line_of = DeviceBuffer<int>(Extents{std::size_t(plane.spokes)});
  // The centring phases of VolumeAssembler: x(z) = sum_p y(p) e^{2 pi i (p - h)(z - h) / P} / sqrt(P).
  std::vector<cfloat> pre(static_cast<std::size_t>(partitions)), post(static_cast<std::size_t>(partitions));
  const int h = partitions / 2;
  const double pi = std::numbers::pi, scale = 1.0 / std::sqrt(double(partitions));
  for (int p = 0; p < partitions; ++p) {
    pre[std::size_t(p)] = cfloat(std::polar(1.0, -2.0 * pi * double(p) * h / partitions));
    post[std::size_t(p)] = cfloat(
        std::polar(scale, -2.0 * pi * double(p) * h / partitions + 2.0 * pi * double(h) * h / partitions));
  }
  d.pre = DeviceBuffer<cfloat>(Extents{pre.size()});
  d.post = DeviceBuffer<cfloat>(Extents{post.size()});
  gpu::copy_to_device(d.pre.data(), pre.data(), pre.size() * sizeof(cfloat), d.stream.get());
  gpu::copy_to_device(d.post.data(), post.data(), post.size() * sizeof(cfloat), d.stream.get());
  d.plan = CufftPlan({partitions}, int(M), d.stream.get());
  d.stream.synchronize();
}

VolumeAssemblerCuda::~VolumeAssemblerCuda() = default;

bool VolumeAssemblerCuda::assemble(int R, const VolumeChain::Gather& gather, std::vector<SpokeHeader>& heads,
                                   VolumeAssembler::Counts& counts) {
  Impl& d = *impl_;
  const int C = d.plane.coils, W = d.plane.spokes, S = d.plane.samples, P = d.P;
  if (R > d.raw_capacity) {
    d.raw = DeviceBuffer<cfloat>(Extents{std::size_t(C), std::size_t(R), std::size_t(S)});
    d.raw_traj = DeviceBuffer<float>(Extents{std::size_t(R), std::size_t(S), 2});
    d.slot_of = DeviceBuffer<int>(Extents{std::size_t(R)});
    d.part = DeviceBuffer<std::uint16_t>(Extents{std::size_t(R)});
    d.raw_capacity = R;
  }
  heads.clear();
  if (!gather(d.raw.data(), d.raw_traj.data(), d.stream.get(), heads)) return false;
  if (int(heads.size()) != R)
    throw InputError("a volume window of " + std::to_string(R) + " spokes came with " +
                     std::to_string(heads.size()) + " headers");
  d.h_steps.resize(std::size_t(R));
  d.h_partitions.resize(std::size_t(R));
  for (int r = 0; r < R; ++r) {
    d.h_steps[std::size_t(r)] = heads[std::size_t(r)].spoke_index;
    d.h_partitions[std::size_t(r)] = heads[std::size_t(r)].partition;
  }
  // On the GPU the trajectories stay there: two spokes are at the same angle when their headers say so (the
  // intake sets every spoke's angle, from its trajectory when it has one). A refused window first lets the
  // gather's copies finish: its spokes are released when this throws.
  VolumeLayout& l = d.layout;
  try {
    volume_layout(
        d.h_steps, d.h_partitions, W, P,
        [&](int a, int b) {
          const double diff = heads[std::size_t(a)].angle - heads[std::size_t(b)].angle;
          return std::abs(std::remainder(diff, 2 * std::numbers::pi)) < 1e-4;
        },
        l);
  } catch (...) {
    d.stream.synchronize();
    throw;
  }
  counts.first_step = l.steps.front();
  counts.last_step = l.steps.back();
  counts.missing = l.missing;
  d.h_line.resize(std::size_t(W));
  for (int j = 0; j < W; ++j) d.h_line[std::size_t(j)] = volume_line(l, j);
  const gpu::StreamRef st = d.stream.get();
  gpu::copy_to_device(d.slot_of.data(), l.slot_of.data(), std::size_t(R) * sizeof(int), st);
  gpu::copy_to_device(d.part.data(), d.h_partitions.data(), std::size_t(R) * sizeof(std::uint16_t), st);
  gpu::copy_to_device(d.line_of.data(), d.h_line.data(), std::size_t(W) * sizeof(int), st);
  // With every (step, partition) there, place_spokes writes every value; only a lost spoke leaves zeros.
  if (l.missing > 0) gpu::memset_device(d.kz.data(), 0, d.kz.size() * sizeof(cfloat), st);
  const long placed = long(R) * C * S;
  place_spokes<<<blocks_for(placed, 256), 256, 0, st>>>(
      reinterpret_cast<const float2*>(d.raw.data()), R, d.slot_of.data(), d.part.data(),
      reinterpret_cast<const float2*>(d.pre.data()), reinterpret_cast<float2*>(d.kz.data()), C, W, S, P);
  CUDA_CHECK_LAUNCH("place_spokes");
  d.plan.execute(d.kz.data(), FftDirection::Inverse);
  const long M = long(d.lines());
  const dim3 grid(unsigned((M + kTile - 1) / kTile), unsigned((P + kTile - 1) / kTile)), block(kTile, kRows);
  split_positions<<<grid, block, 0, st>>>(reinterpret_cast<const float2*>(d.kz.data()),
                                          reinterpret_cast<const float2*>(d.post.data()),
                                          reinterpret_cast<float2*>(d.frames.data()), M, P);
  CUDA_CHECK_LAUNCH("split_positions");
  slot_trajectories<<<blocks_for(long(W) * S * 2, 256), 256, 0, st>>>(d.raw_traj.data(), d.line_of.data(),
                                                                      d.traj.data(), W, S);
  CUDA_CHECK_LAUNCH("slot_trajectories");
  d.stream.synchronize();
  return true;
}

const cfloat* VolumeAssemblerCuda::frame(int z) const {
  return impl_->frames.data() + std::size_t(z) * impl_->lines();
}
const float* VolumeAssemblerCuda::traj() const {
  return impl_->traj.data();
}
std::size_t VolumeAssemblerCuda::frame_values() const {
  return impl_->lines();
}
std::size_t VolumeAssemblerCuda::traj_values() const {
  return impl_->traj.size();
}

void VolumeAssemblerCuda::download(int z, Frame& f) const {
  const gpu::StreamRef st = impl_->stream.get();
  gpu::copy_to_host(f.data.data(), frame(z), frame_values() * sizeof(cfloat), st);
  gpu::copy_to_host(f.traj.data(), traj(), traj_values() * sizeof(float), st);
  impl_->stream.synchronize();
}

}  // namespace radstream
