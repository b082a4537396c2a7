// Vector operations on the device. The scalar slots are device doubles; dot products reduce in two passes
// (per-block partial sums, then the last block to finish adds them, in block order: deterministic, one
// launch; a counter's one atomic per block only decides which block is last); the CG updates read their
// coefficients from the slots inside the kernels.
#include <algorithm>
#include <array>

#include "gpu/cuda_check.cuh"
#include "gpu/dependent_launch.cuh"
#include "gpu/device_memory.hpp"
#include "gpu/loop_condition.cuh"
#include "gpu/pinned_buffer.hpp"
#include "linalg/vector_ops.hpp"

namespace radstream {
namespace {

constexpr int kThreads = 256;
constexpr int kPartials = 1024;  // blocks of the first reduction pass (grid-stride beyond)

unsigned blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535 * 8 ? (b ? b : 1) : 65535 * 8);
}

__global__ void axpy_kernel(float2* y, float a, const float2* x, std::size_t n) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    y[i].x += a * x[i].x;
    y[i].y += a * x[i].y;
  }
}

__global__ void fill_kernel(float2* x, std::size_t n, float2 v) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = v;
}

__global__ void scale_kernel(float2* x, std::size_t n, float a) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    x[i].x *= a;
    x[i].y *= a;
  }
}

__global__ void rsub_kernel(float2* y, const float2* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    y[i].x = x[i].x - y[i].x;
    y[i].y = x[i].y - y[i].y;
  }
}

__device__ double block_sum(double v) {
  __shared__ double warp_sums[kThreads / 32];
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0;
  if (threadIdx.x < 32)
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  return v;
}

// Called by every thread of every block with its own sum: partial[b] = block b's sum; the last block to
// finish (counted in *done, reset by it for the next call) writes the sum of partial[0..gridDim.x) to *slot.
__device__ void finish_sum(double s, double* partial, unsigned* done, double* slot) {
  s = block_sum(s);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  double t = 0;
  for (unsigned i = threadIdx.x; i < gridDim.x; i += kThreads) t += static_cast<volatile double*>(partial)[i];
  t = block_sum(t);
  if (threadIdx.x == 0) {
    *slot = t;
    *done = 0;
  }
}

__device__ inline double re_dot(float2 a, float2 b) {
  return double(a.x) * b.x + double(a.y) * b.y;
}

#define REDUCE_STRIDE(i, n)                                                       \
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < (n); \
       i += std::size_t(gridDim.x) * kThreads)

__global__ void __launch_bounds__(kThreads) dot_kernel(const float2* x, const float2* y, std::size_t n,
                                                       double* partial, unsigned* done, double* slot) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  double s = 0;
  REDUCE_STRIDE(i, n) s += re_dot(x[i], y[i]);
  finish_sum(s, partial, done, slot);
}

// r = p = b; slot = Re <b, b>.
__global__ void __launch_bounds__(kThreads)
    cg_start_kernel(float2* r, float2* p, const float2* b, std::size_t n, double* partial, unsigned* done,
                    double* slot) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  double s = 0;
  REDUCE_STRIDE(i, n) {
    const float2 bi = b[i];
    r[i] = bi;
    p[i] = bi;
    s += re_dot(bi, bi);
  }
  finish_sum(s, partial, done, slot);
}
// y += a x; slot = Re <x, y>.
__global__ void __launch_bounds__(kThreads)
    axpy_dot_kernel(float2* y, float a, const float2* x, std::size_t n, double* partial, unsigned* done,
                    double* slot) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  double s = 0;
  REDUCE_STRIDE(i, n) {
    const float2 xi = x[i];
    float2 yi = y[i];
    yi.x += a * xi.x;
    yi.y += a * xi.y;
    y[i] = yi;
    s += re_dot(xi, yi);
  }
  finish_sum(s, partial, done, slot);
}

// The CG step (alpha = s[rr] / s[pq], 0 when s[pq] <= 0 or s[rr] <= limit), then rr_new = Re <r, r>.
__global__ void __launch_bounds__(kThreads)
    cg_step_norm_kernel(float2* x, float2* r, const float2* p, const float2* q, std::size_t n,
                        const double* rr, const double* pq, double limit, double* partial, unsigned* done,
                        double* rr_new) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  const float alpha = *pq > 0 && *rr > limit ? float(*rr / *pq) : 0.f;
  double s = 0;
  REDUCE_STRIDE(i, n) {
    const float2 pi = p[i], qi = q[i];
    float2 xi = x[i], ri = r[i];
    xi.x += alpha * pi.x;
    xi.y += alpha * pi.y;
    ri.x -= alpha * qi.x;
    ri.y -= alpha * qi.y;
    x[i] = xi;
    r[i] = ri;
    s += re_dot(ri, ri);
  }
  finish_sum(s, partial, done, rr_new);
}

__global__ void cg_direction_kernel(float2* p, const float2* r, std::size_t n, const double* rr_new,
                                    const double* rr_old) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  const float beta = *rr_old > 0 ? float(*rr_new / *rr_old) : 0.f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    p[i].x = r[i].x + beta * p[i].x;
    p[i].y = r[i].y + beta * p[i].y;
  }
}

// The device's clock (ns) and the slots that keep its readings (as the bits of a double: the clock's
// nanoseconds since the epoch need all 64 bits).
__device__ inline unsigned long long device_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline void put_ns(double& slot, unsigned long long t) {
  slot = __longlong_as_double(static_cast<long long>(t));
}
__device__ inline double ms_since(const double& slot, unsigned long long now) {
  return double(now - static_cast<unsigned long long>(__double_as_longlong(slot))) * 1e-6;
}

using DL = DeviceDeadline;

__global__ void deadline_start_kernel(double* s, DeviceDeadline d) {
  double* t = s + d.base;
  const unsigned long long now = device_ns();
  put_ns(t[DL::kStart], now);
  put_ns(t[DL::kLast], now);
  put_ns(t[DL::kStepStart], now);
  t[DL::kStopped] = 0;
  t[DL::kSteps] = 1;
}

__global__ void deadline_gate_kernel(double* s, DeviceDeadline d, gpu::LoopHandle branch) {
  double* t = s + d.base;
  const unsigned long long now = device_ns();
  const bool go =
      t[DL::kStopped] == 0 && ms_since(t[DL::kStart], now) + d.margin * t[DL::kSetup] <= t[DL::kBudget];
  if (go) {
    put_ns(t[DL::kStepStart], now);
    t[DL::kSteps] += 1;
  } else {
    t[DL::kStopped] = 1;
  }
  gpu::set_loop_condition(branch, go);
}

// Under a deadline: times what ran since the last reading (first: the Newton step's set-up and iteration 0)
// and says whether the next iteration fits.
__device__ bool deadline_allows(double* s, const DeviceDeadline& d, bool first) {
  double* t = s + d.base;
  const unsigned long long now = device_ns();
  if (first)
    t[DL::kSetup] = fmax(t[DL::kSetup], ms_since(t[DL::kStepStart], now));
  else
    t[DL::kIteration] = fmax(t[DL::kIteration], ms_since(t[DL::kLast], now));
  put_ns(t[DL::kLast], now);
  return ms_since(t[DL::kStart], now) + d.margin * t[DL::kIteration] <= t[DL::kBudget];
}

// One thread: the CG's loop control (VectorOps::cg_loop_control).
__global__ void cg_loop_control_kernel(double* s, CgLoopSlots k, CgStop stop, int max_iterations, bool first,
                                       bool reset_total, DeviceDeadline d, gpu::LoopHandle loop) {
  gpu::wait_for_previous();  // launched dependent (gpu/dependent_launch.cuh)
  double newest;
  if (first) {
    s[k.prev] = s[k.bb];
    s[k.count] = 1;
    s[k.total] = (reset_total ? 0.0 : s[k.total]) + 1;
    newest = s[k.cur];
  } else {
    newest = s[k.prev];
    s[k.prev] = s[k.cur];
    s[k.cur] = newest;
    s[k.count] += 1;
    s[k.total] += 1;
  }
  const double bb = s[k.bb];  // CgStop::limit, here on the device
  const double limit = stop.power == 2 ? stop.coef * bb * bb : stop.coef * bb;
  bool again = s[k.count] < max_iterations && isfinite(newest) && newest > limit;
  if (d.base >= 0 && !deadline_allows(s, d, first) && again) {
    again = false;
    s[d.base + DL::kStopped] = 1;
  }
  gpu::set_loop_condition(loop, again);
}

class VectorOpsCuda final : public VectorOps {
 public:
  explicit VectorOpsCuda(gpu::StreamRef stream)
      : stream_(static_cast<cudaStream_t>(stream)),
        slots_(Extents{kSlots}),
        partial_(Extents{kPartials}),
        done_(Extents{1}) {
    gpu::memset_device(slots_.data(), 0, kSlots * sizeof(double), stream);
    gpu::memset_device(done_.data(), 0, sizeof(unsigned), stream);
  }
  Location location() const override { return Location::Device; }

  void copy(cfloat* dst, const cfloat* src, std::size_t n) override {
    if (dst != src) gpu::copy_device(dst, src, n * sizeof(cfloat), stream_);
  }
  void zero(cfloat* x, std::size_t n) override { gpu::memset_device(x, 0, n * sizeof(cfloat), stream_); }
  void fill(cfloat* x, std::size_t n, cfloat v) override {
    fill_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(f2(x), n, make_float2(v.real(), v.imag()));
    CUDA_CHECK_LAUNCH("fill_kernel");
  }
  void scale(cfloat* x, std::size_t n, float a) override {
    scale_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(f2(x), n, a);
    CUDA_CHECK_LAUNCH("scale_kernel");
  }
  void to_host(cfloat* host, const cfloat* src, std::size_t n) override {
    gpu::copy_to_host(host, src, n * sizeof(cfloat), stream_);
    gpu::synchronize(stream_);
  }

  void axpy(cfloat* y, float a, const cfloat* x, std::size_t n) override {
    gpu::launch_dependent("axpy_kernel", axpy_kernel, blocks_for(n), kThreads, 0, stream_, f2(y), a, f2(x),
                          n);
  }
  void rsub(cfloat* y, const cfloat* x, std::size_t n) override {
    rsub_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(f2(y), f2(x), n);
    CUDA_CHECK_LAUNCH("rsub_kernel");
  }
  void dot_re(const cfloat* x, const cfloat* y, std::size_t n, int slot) override {
    gpu::launch_dependent("dot_kernel", dot_kernel, reduce_blocks(n), kThreads, 0, stream_, f2(x), f2(y), n,
                          partial_.data(), done_.data(), at(slot));
  }
  void cg_start(cfloat* r, cfloat* p, const cfloat* b, std::size_t n, int slot) override {
    gpu::launch_dependent("cg_start_kernel", cg_start_kernel, reduce_blocks(n), kThreads, 0, stream_, f2(r),
                          f2(p), f2(b), n, partial_.data(), done_.data(), at(slot));
  }
  void axpy_dot(cfloat* y, float a, const cfloat* x, std::size_t n, int slot) override {
    gpu::launch_dependent("axpy_dot_kernel", axpy_dot_kernel, reduce_blocks(n), kThreads, 0, stream_, f2(y),
                          a, f2(x), n, partial_.data(), done_.data(), at(slot));
  }
  void cg_step_norm(cfloat* x, cfloat* r, const cfloat* p, const cfloat* q, std::size_t n, int rr, int pq,
                    int rr_new, double limit) override {
    gpu::launch_dependent("cg_step_norm_kernel", cg_step_norm_kernel, reduce_blocks(n), kThreads, 0, stream_,
                          f2(x), f2(r), f2(p), f2(q), n, at(rr), at(pq), limit, partial_.data(), done_.data(),
                          at(rr_new));
  }
  void post(int slot, int entry) override {
    if (entry < 0 || entry >= kPosts) throw InputError("vector ops: post entry out of range");
    gpu::copy_to_host(posted_.data() + entry, at(slot), sizeof(double), stream_);
    events_[std::size_t(entry)].record(stream_);
  }
  double fetch(int entry) override {
    if (entry < 0 || entry >= kPosts) throw InputError("vector ops: post entry out of range");
    events_[std::size_t(entry)].synchronize();
    return posted_.data()[entry];
  }

  void cg_direction(cfloat* p, const cfloat* r, std::size_t n, int rr_new, int rr_old) override {
    gpu::launch_dependent("cg_direction_kernel", cg_direction_kernel, blocks_for(n), kThreads, 0, stream_,
                          f2(p), f2(r), n, at(rr_new), at(rr_old));
  }
  double read(int slot) override {
    double v = 0;
    gpu::copy_to_host(&v, at(slot), sizeof(double), stream_);
    gpu::synchronize(stream_);
    return v;
  }

  bool device_loops() const override { return true; }
  void cg_loop_control(gpu::LoopHandle loop, const CgLoopSlots& slots, const CgStop& stop, int max_iterations,
                       bool first, bool reset_total, const DeviceDeadline& deadline) override {
    for (int slot : {slots.cur, slots.prev, slots.bb, slots.count, slots.total}) at(slot);  // checked
    if (deadline.active()) check(deadline);
    gpu::launch_dependent("cg_loop_control_kernel", cg_loop_control_kernel, 1, 1, 0, stream_, slots_.data(),
                          slots, stop, max_iterations, first, reset_total, deadline, loop);
  }
  void deadline_start(const DeviceDeadline& deadline) override {
    check(deadline);
    deadline_start_kernel<<<1, 1, 0, stream_>>>(slots_.data(), deadline);
    CUDA_CHECK_LAUNCH("deadline_start_kernel");
  }
  void deadline_gate(gpu::LoopHandle branch, const DeviceDeadline& deadline) override {
    check(deadline);
    deadline_gate_kernel<<<1, 1, 0, stream_>>>(slots_.data(), deadline, branch);
    CUDA_CHECK_LAUNCH("deadline_gate_kernel");
  }
  void set_slots(int first, const double* values, int count) override {
    check_range(first, count);
    std::copy(values, values + count, staged_.data());  // the last frame's copy has been waited for
    gpu::copy_to_device(at(first), staged_.data(), std::size_t(count) * sizeof(double), stream_);
  }
  void read_slots(int first, double* values, int count) override {
    check_range(first, count);
    gpu::copy_to_host(staged_read_.data(), at(first), std::size_t(count) * sizeof(double), stream_);
    gpu::synchronize(stream_);
    std::copy(staged_read_.data(), staged_read_.data() + count, values);
  }

  void read2(int a, int b, double& va, double& vb) override {
    gpu::copy_to_host(&va, at(a), sizeof(double), stream_);
    gpu::copy_to_host(&vb, at(b), sizeof(double), stream_);
    gpu::synchronize(stream_);
  }

 private:
  cudaStream_t stream_;
  DeviceBuffer<double> slots_, partial_;
  DeviceBuffer<unsigned> done_;  // the reductions' count of finished blocks (0 between calls)
  PinnedHostBuffer<double> posted_{Extents{kPosts}};
  PinnedHostBuffer<double> staged_{Extents{kSlots}}, staged_read_{Extents{kSlots}};
  std::array<gpu::Event, kPosts> events_;

  void check_range(int first, int count) {
    if (count < 1 || first < 0 || first + count > kSlots) throw InputError("vector ops: slots out of range");
  }
  void check(const DeviceDeadline& d) { check_range(d.base, DeviceDeadline::kCount); }
  static unsigned reduce_blocks(std::size_t n) { return std::min<unsigned>(kPartials, blocks_for(n)); }

  double* at(int slot) {
    if (slot < 0 || slot >= kSlots) throw InputError("vector ops: scalar slot out of range");
    return slots_.data() + slot;
  }
  static float2* f2(cfloat* p) { return reinterpret_cast<float2*>(p); }
  static const float2* f2(const cfloat* p) { return reinterpret_cast<const float2*>(p); }
};

}  // namespace

std::unique_ptr<VectorOps> make_vector_ops_cuda(gpu::StreamRef stream) {
  return std::make_unique<VectorOpsCuda>(stream);
}

}  // namespace radstream
