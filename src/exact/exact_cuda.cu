#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "exact/exact_cuda.hpp"
#include "exact/exact_kernels_common.cuh"
#include "exact/exact_kernels_field.cuh"
#include "exact/exact_kernels_plain.cuh"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

// out[o] = sum over the S partial sums, accumulated in the partials' own precision (float2 or double2).
template <class T2>
__global__ void sum_partials(const T2* __restrict__ part, int S, long long n, float2* __restrict__ out) {
  const long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (o >= n) return;
  T2 a = part[o];
  for (int s = 1; s < S; ++s) {
    const T2 b = part[s * n + o];
    a.x += b.x;
    a.y += b.y;
  }
  out[o] = make_float2(float(a.x), float(a.y));
}

// The same with a warp per output, for many partials and few outputs (seed 001's forward: 70 partials of
// 3,770 samples): lane l adds partials l, l + 32, ..., then a fixed shuffle tree (the order is the same every
// run).
template <class T2>
__global__ void sum_partials_warp(const T2* __restrict__ part, int S, long long n, float2* __restrict__ out) {
  const long long o = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (o >= n) return;  // whole warps leave together
  T2 a{};
  for (int s = lane; s < S; s += 32) {
    const T2 b = part[s * n + o];
    a.x += b.x;
    a.y += b.y;
  }
  for (int d = 16; d > 0; d >>= 1) {
    a.x += __shfl_down_sync(0xffffffffu, a.x, d);
    a.y += __shfl_down_sync(0xffffffffu, a.y, d);
  }
  if (lane == 0) out[o] = make_float2(float(a.x), float(a.y));
}

// Q(-s) = conj(Q(s)) for real weights: Q was computed for s_a >= 0 along axis a (the half grid, n_a points:
// 0..n_a-1); the full 2N grid gets the rest by symmetry. Displacements of -n along any axis never enter the
// convolution (|i - i'| <= n - 1) and are set to 0.
struct QMirror {
  long long q[3];  // the 2N grid's extents
  long long n[3];  // the image grid's (1 where the axis has one voxel)
  long long h[3];  // the half grid's extents
  int axis;
};

__global__ void q_mirror(const float2* __restrict__ half, QMirror m, float2* __restrict__ out) {
  const long long L = m.q[0] * m.q[1] * m.q[2], j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= L) return;
  long long idx[3] = {j / (m.q[1] * m.q[2]), (j / m.q[2]) % m.q[1], j % m.q[2]};
  long long sd[3];
  bool edge = false;
  for (int a = 0; a < 3; ++a) {
    sd[a] = m.q[a] > 1 ? idx[a] - m.n[a] : 0;  // the displacement
    if (m.q[a] > 1 && sd[a] == -m.n[a]) edge = true;
  }
  float2 v = make_float2(0.0f, 0.0f);
  if (edge) {
  } else if (sd[m.axis] >= 0) {
    long long hi[3];
    for (int a = 0; a < 3; ++a) hi[a] = a == m.axis ? sd[a] : idx[a];
    v = half[(hi[0] * m.h[1] + hi[1]) * m.h[2] + hi[2]];
  } else {
    long long hi[3];
    for (int a = 0; a < 3; ++a) hi[a] = a == m.axis ? -sd[a] : (m.q[a] > 1 ? m.n[a] - sd[a] : 0);
    const float2 w = half[(hi[0] * m.h[1] + hi[1]) * m.h[2] + hi[2]];
    v = make_float2(w.x, -w.y);
  }
  out[j] = v;
}

// The model's matrix: a block's threads take consecutive voxels (coalesced rows), blockIdx.y kMatrixRows
// samples, whose k and sinc product w0 are staged once. Entry = w exp(-2 pi i phase), the forward's term.
constexpr int kMatrixRows = 16;

template <bool FAST, bool GRADS>
__global__ void __launch_bounds__(kThreads)
    field_matrix(const float4* __restrict__ smp, int M, GridArgs g, const float4* __restrict__ vfield,
                 long long ld, float2* __restrict__ out) {
  __shared__ float4 s_k[kMatrixRows];
  __shared__ float s_w0[kMatrixRows];
  const int row0 = blockIdx.y * kMatrixRows;
  if (threadIdx.x < kMatrixRows && row0 + threadIdx.x < M) {
    const float4 k = smp[row0 + threadIdx.x];
    s_k[threadIdx.x] = k;
    s_w0[threadIdx.x] = GRADS ? sinc_product<FAST>(k.x, k.y, k.z) : 1.0f;
  }
  __syncthreads();
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  const long long v = blockIdx.x * (long long)kThreads + threadIdx.x;
  if (v >= ld) return;
  const bool active = v < V;
  const float r2 = g.o2 + float(v % g.n2), r1 = g.o1 + float((v / g.n2) % g.n1),
              r0 = g.o0 + float(v / ((long long)g.n2 * g.n1));
  const float4 vf = active && vfield ? vfield[v] : make_float4(0, 0, 0, 0);
  const int rows = min(kMatrixRows, M - row0);
  for (int j = 0; j < rows; ++j) {
    float c = 0.0f, sn = 0.0f, w = 0.0f;
    if (active) field_term<FAST, GRADS>(s_k[j], r0, r1, r2, vf, s_w0[j], c, sn, w);
    out[(row0 + j) * ld + v] = make_float2(w * c, -w * sn);
  }
}

__global__ void real_to_complex(const float* __restrict__ w, int M, float2* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) out[i] = make_float2(w ? w[i] : 1.0f, 0.0f);
}

// How many ways to split a sum of `terms` (in parts of kSegment) so that threads * ways reaches
// kTargetThreads.
int split_for(long long threads, long long terms) {
  const long long units = (terms + kSegment - 1) / kSegment;
  const long long want = (kTargetThreads + threads - 1) / std::max(1LL, threads);
  return int(std::clamp(want, 1LL, std::max(1LL, std::min(units, 4096LL))));
}

unsigned blocks(long long threads) {
  return unsigned((threads + kThreads - 1) / kThreads);
}

// out = the sum of the S partials: a warp per output when the partials are many (>= 16) and the outputs few
// enough, else a thread per output.
template <class T2>
void reduce_partials(const T2* part, int S, long long n, float2* out, cudaStream_t s) {
  if (S >= 16 && n <= (1LL << 22))
    sum_partials_warp<<<blocks(32 * n), kThreads, 0, s>>>(part, S, n, out);
  else
    sum_partials<<<blocks(n), kThreads, 0, s>>>(part, S, n, out);
  CUDA_CHECK_LAUNCH("exact sum_partials");
}

}  // namespace

struct ExactDeviceModel {
  ExactGrid grid, qgrid, qhalf;  // qhalf: qgrid with displacements >= 0 only along qaxis
  int qaxis = 0;
  DeviceBuffer<cfloat> qhalf_values;
  int M = 0;
  bool field = false, grads = false;
  bool grads_only = false;  // gradients and fm = 0 everywhere: the row-recurrence kernels
  int split_grad_adjoint = 1;
  DeviceBuffer<float4> samples;  // k0, k1, k2, t
  DeviceBuffer<float4> vfield;   // fm, g0, g1, g2 (field only)
  DeviceBuffer<cfloat> weights;  // Q's sample weights as complex data
  DeviceBuffer<cfloat> partials;
  DeviceBuffer<double2> field_partials;  // the field kernels' sums, always (then reduced to float)
  int split_adjoint = 1, split_forward = 1, split_q = 1;
  // A trajectory symmetric about k = 0: P pairs (i, j) with k_j = -k_i, their k, and the paired data.
  int P = 0;
  DeviceBuffer<int2> pairs;
  DeviceBuffer<float4> pair_samples, pair_values;
};

namespace {

// Pairs every sample with the one at -k (bit-exact). Empty unless every sample has a partner.
std::vector<std::pair<int, int>> symmetric_pairs(const ExactModel& m) {
  struct Key {
    float a, b, c;
    bool operator==(const Key& o) const { return a == o.a && b == o.b && c == o.c; }
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      std::uint32_t u[3];
      std::memcpy(u, &k, sizeof u);
      return (std::size_t(u[0]) * 0x9E3779B97F4A7C15ULL) ^ (std::size_t(u[1]) * 0xC2B2AE3D27D4EB4FULL) ^ u[2];
    }
  };
  const std::size_t M = m.samples();
  std::unordered_multimap<Key, int, Hash> at;
  at.reserve(M);
  for (std::size_t i = 0; i < M; ++i) at.emplace(Key{m.k[0][i], m.k[1][i], m.k[2][i]}, int(i));
  std::vector<char> used(M, 0);
  std::vector<std::pair<int, int>> pairs;
  pairs.reserve(M / 2);
  for (std::size_t i = 0; i < M; ++i) {
    if (used[i]) continue;
    const Key neg{-m.k[0][i], -m.k[1][i], -m.k[2][i]};
    int partner = -1;
    auto [lo, hi] = at.equal_range(neg);
    for (auto it = lo; it != hi; ++it)
      if (!used[it->second] && std::size_t(it->second) != i) {
        partner = it->second;
        break;
      }
    if (partner < 0) return {};
    used[i] = used[partner] = 1;
    pairs.emplace_back(int(i), partner);
  }
  return pairs;
}

}  // namespace

ExactOperatorCuda::ExactOperatorCuda(const ExactModel& model, bool fast, gpu::StreamRef stream)
    : LinearOperator(
          Extents{std::size_t(model.grid.n[0]), std::size_t(model.grid.n[1]), std::size_t(model.grid.n[2])},
          Extents{model.samples()}, Location::Device),
      stream_(stream),
      fast_(fast) {
  const ExactModel m = model.filled();
  auto dm = std::make_unique<ExactDeviceModel>();
  dm->grid = m.grid;
  dm->qgrid = m.grid.q_grid();
  dm->qhalf = dm->qgrid;
  while (dm->qaxis < 2 && m.grid.n[dm->qaxis] <= 1) ++dm->qaxis;
  dm->qhalf.n[dm->qaxis] = m.grid.n[dm->qaxis];
  dm->qhalf.origin[dm->qaxis] = 0.0;
  const std::size_t M = m.samples(), V = m.voxels();
  if (M > std::size_t(1) << 30)
    throw InputError("exact model: " + std::to_string(M) + " samples is too many");
  dm->M = int(M);
  dm->field = m.has_field();
  dm->grads = m.has_gradients();
  std::vector<float4> h(M);
  for (std::size_t i = 0; i < M; ++i)
    h[i] = make_float4(m.k[0][i], m.k[1][i], m.k[2][i], m.t.empty() ? 0.0f : m.t[i]);
  dm->samples = DeviceBuffer<float4>(Extents{M});
  gpu::copy_to_device(dm->samples.data(), h.data(), M * sizeof(float4), stream);
  if (!dm->field) {
    const auto pairs = symmetric_pairs(m);
    if (!pairs.empty()) {
      dm->P = int(pairs.size());
      std::vector<int2> hp(pairs.size());
      std::vector<float4> hk(pairs.size());
      for (std::size_t p = 0; p < pairs.size(); ++p) {
        hp[p] = make_int2(pairs[p].first, pairs[p].second);
        hk[p] = h[std::size_t(pairs[p].first)];
      }
      dm->pairs = DeviceBuffer<int2>(Extents{hp.size()});
      dm->pair_samples = DeviceBuffer<float4>(Extents{hk.size()});
      dm->pair_values = DeviceBuffer<float4>(Extents{hk.size()});
      gpu::copy_to_device(dm->pairs.data(), hp.data(), hp.size() * sizeof(int2), stream);
      gpu::copy_to_device(dm->pair_samples.data(), hk.data(), hk.size() * sizeof(float4), stream);
      gpu::synchronize(stream);
    }
  }
  std::vector<float4> hv;
  if (dm->field) {
    hv.resize(V);
    for (std::size_t v = 0; v < V; ++v)
      hv[v] =
          dm->grads ? make_float4(m.fm[v], m.g[0][v], m.g[1][v], m.g[2][v]) : make_float4(m.fm[v], 0, 0, 0);
    dm->vfield = DeviceBuffer<float4>(Extents{V});
    gpu::copy_to_device(dm->vfield.data(), hv.data(), V * sizeof(float4), stream);
  }
  const long long runs = (m.grid.n[2] + kRun - 1) / kRun;
  const long long adj_threads = dm->field ? (long long)V : (long long)m.grid.n[0] * m.grid.n[1] * runs;
  const ExactGrid& q = dm->qhalf;
  const std::size_t Meff = dm->P ? std::size_t(dm->P) : M;  // the sums' length (pairs count once)
  dm->split_adjoint = split_for(adj_threads, dm->field ? M : Meff);
  dm->split_forward = split_for((long long)M, (long long)V);
  dm->split_q = split_for((long long)q.n[0] * q.n[1] * ((q.n[2] + kRun - 1) / kRun), Meff);
  const std::size_t part = std::max({dm->split_adjoint > 1 ? dm->split_adjoint * V : 0,
                                     dm->split_forward > 1 ? dm->split_forward * M : 0,
                                     dm->split_q > 1 ? dm->split_q * q.voxels() : 0});
  if (part) dm->partials = DeviceBuffer<cfloat>(Extents{part});
  if (dm->field) {
    dm->grads_only = dm->grads && std::all_of(m.fm.begin(), m.fm.end(), [](float v) { return v == 0.0f; });
    dm->split_grad_adjoint = split_for(
        32LL * m.grid.n[0] * m.grid.n[1] * ((m.grid.n[2] + kGradRunAdjoint - 1) / kGradRunAdjoint), M);
    dm->field_partials = DeviceBuffer<double2>(
        Extents{std::max({std::size_t(dm->split_adjoint) * V, std::size_t(dm->split_forward) * M,
                          std::size_t(dm->split_grad_adjoint) * V})});
  }
  dm->weights = DeviceBuffer<cfloat>(Extents{M});
  dm->qhalf_values = DeviceBuffer<cfloat>(Extents{dm->qhalf.voxels()});
  gpu::synchronize(stream);
  dm_ = dm.release();
}

ExactOperatorCuda::~ExactOperatorCuda() {
  delete dm_;
}

namespace {

void finish(ExactDeviceModel& dm, int split, long long n, float2* out, cudaStream_t s) {
  if (split <= 1) return;
  reduce_partials(reinterpret_cast<const float2*>(dm.partials.data()), split, n, out, s);
}

// real_q: Q with unit weights on a symmetric trajectory (its imaginary part is 0).
template <bool FAST>
void launch_adjoint(ExactDeviceModel& dm, const ExactGrid& grid, int split, const float2* d, float2* x,
                    cudaStream_t s, bool real_q = false) {
  const GridArgs g = grid_args(grid);
  float2* out = split > 1 ? reinterpret_cast<float2*>(dm.partials.data()) : x;
  const long long V = (long long)grid.voxels();
  if (!dm.field || &grid == &dm.qhalf) {
    const long long threads = (long long)g.n0 * g.n1 * ((g.n2 + kRun - 1) / kRun);
    const dim3 grid_dim(blocks(threads), unsigned(split));
    if (dm.P) {
      pair_data<<<blocks(dm.P), kThreads, 0, s>>>(d, dm.pairs.data(), dm.P, dm.pair_values.data());
      CUDA_CHECK_LAUNCH("exact pair_data");
      if (real_q)
        adjoint_plain<FAST, true, true>
            <<<grid_dim, kThreads, 0, s>>>(dm.pair_samples.data(), dm.pair_values.data(), dm.P, g, out);
      else
        adjoint_plain<FAST, true>
            <<<grid_dim, kThreads, 0, s>>>(dm.pair_samples.data(), dm.pair_values.data(), dm.P, g, out);
    } else {
      adjoint_plain<FAST, false><<<grid_dim, kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g, out);
    }
  } else {
    double2* part = dm.field_partials.data();
    if (dm.grads_only) {
      const long long threads =
          32LL * g.n0 * g.n1 * ((g.n2 + kGradRunAdjoint - 1) / kGradRunAdjoint);  // a warp per run
      adjoint_grad_runs<FAST><<<dim3(blocks(threads), unsigned(dm.split_grad_adjoint)), kThreads, 0, s>>>(
          dm.samples.data(), d, dm.M, g, dm.vfield.data(), part);
      CUDA_CHECK_LAUNCH("exact adjoint (gradient runs)");
      reduce_partials(part, dm.split_grad_adjoint, V, x, s);
      return;
    }
    if (dm.grads)
      adjoint_field<FAST, true><<<dim3(blocks(V), unsigned(split)), kThreads, 0, s>>>(
          dm.samples.data(), d, dm.M, g, dm.vfield.data(), part);
    else
      adjoint_field<FAST, false><<<dim3(blocks(V), unsigned(split)), kThreads, 0, s>>>(
          dm.samples.data(), d, dm.M, g, dm.vfield.data(), part);
    CUDA_CHECK_LAUNCH("exact adjoint (field)");
    reduce_partials(part, split, V, x, s);
    return;
  }
  CUDA_CHECK_LAUNCH("exact adjoint");
  finish(dm, split, V, x, s);
}

template <bool FAST>
void launch_forward(ExactDeviceModel& dm, const float2* x, float2* d, cudaStream_t s) {
  const GridArgs g = grid_args(dm.grid);
  const int split = dm.split_forward;
  float2* out = split > 1 ? reinterpret_cast<float2*>(dm.partials.data()) : d;
  const dim3 grid(blocks(dm.M), unsigned(split));
  if (dm.field) {
    double2* part = dm.field_partials.data();
    if (dm.grads_only)
      forward_grad_runs<FAST>
          <<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), part);
    else if (dm.grads)
      forward_field<FAST, true>
          <<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), part);
    else
      forward_field<FAST, false>
          <<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), part);
    CUDA_CHECK_LAUNCH("exact forward (field)");
    reduce_partials(part, split, dm.M, d, s);
    return;
  }
  forward_plain<FAST><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, out);
  CUDA_CHECK_LAUNCH("exact forward");
  finish(dm, split, dm.M, d, s);
}

}  // namespace

void ExactOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  auto s = static_cast<cudaStream_t>(stream_);
  const auto* x = reinterpret_cast<const float2*>(d_x);
  auto* y = reinterpret_cast<float2*>(d_y);
  fast_ ? launch_forward<true>(*dm_, x, y, s) : launch_forward<false>(*dm_, x, y, s);
}

void ExactOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  auto s = static_cast<cudaStream_t>(stream_);
  const auto* y = reinterpret_cast<const float2*>(d_y);
  auto* x = reinterpret_cast<float2*>(d_x);
  fast_ ? launch_adjoint<true>(*dm_, dm_->grid, dm_->split_adjoint, y, x, s)
        : launch_adjoint<false>(*dm_, dm_->grid, dm_->split_adjoint, y, x, s);
}

void ExactOperatorCuda::matrix(cfloat* d_g, std::size_t ld) {
  auto s = static_cast<cudaStream_t>(stream_);
  if (ld < dm_->grid.voxels())
    throw InputError("exact matrix: leading dimension " + std::to_string(ld) + " < voxels");
  const GridArgs g = grid_args(dm_->grid);
  const dim3 grid(blocks((long long)ld), unsigned((dm_->M + kMatrixRows - 1) / kMatrixRows));
  auto* out = reinterpret_cast<float2*>(d_g);
  const float4* vf = dm_->field ? dm_->vfield.data() : nullptr;
  const long long l = (long long)ld;
  if (dm_->grads)
    fast_ ? field_matrix<true, true><<<grid, kThreads, 0, s>>>(dm_->samples.data(), dm_->M, g, vf, l, out)
          : field_matrix<false, true><<<grid, kThreads, 0, s>>>(dm_->samples.data(), dm_->M, g, vf, l, out);
  else
    fast_ ? field_matrix<true, false><<<grid, kThreads, 0, s>>>(dm_->samples.data(), dm_->M, g, vf, l, out)
          : field_matrix<false, false><<<grid, kThreads, 0, s>>>(dm_->samples.data(), dm_->M, g, vf, l, out);
  CUDA_CHECK_LAUNCH("exact field_matrix");
}

void ExactOperatorCuda::q(const float* d_w, cfloat* d_q) {
  auto s = static_cast<cudaStream_t>(stream_);
  real_to_complex<<<blocks(dm_->M), kThreads, 0, s>>>(d_w, dm_->M,
                                                      reinterpret_cast<float2*>(dm_->weights.data()));
  CUDA_CHECK_LAUNCH("exact q weights");
  const auto* w = reinterpret_cast<const float2*>(dm_->weights.data());
  auto* half = reinterpret_cast<float2*>(dm_->qhalf_values.data());
  const bool real_q = d_w == nullptr && dm_->P > 0;
  fast_ ? launch_adjoint<true>(*dm_, dm_->qhalf, dm_->split_q, w, half, s, real_q)
        : launch_adjoint<false>(*dm_, dm_->qhalf, dm_->split_q, w, half, s, real_q);
  QMirror mi{};
  for (int a = 0; a < 3; ++a) {
    mi.q[a] = dm_->qgrid.n[a];
    mi.n[a] = dm_->grid.n[a];
    mi.h[a] = dm_->qhalf.n[a];
  }
  mi.axis = dm_->qaxis;
  q_mirror<<<blocks((long long)dm_->qgrid.voxels()), kThreads, 0, s>>>(half, mi,
                                                                       reinterpret_cast<float2*>(d_q));
  CUDA_CHECK_LAUNCH("exact q_mirror");
}

}  // namespace radstream
