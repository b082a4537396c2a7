// NLINV's model work on the custom FFT engine (nlinv_fused_cuda.hpp).
#include <string>

#include "core/error.hpp"
#include "fft/custom_fft.cuh"
#include "gpu/cuda_check.cuh"
#include "gpu/dependent_launch.cuh"
#include "nlinv/nlinv_fused_cuda.hpp"

namespace radstream {
namespace {

using namespace customfft;

#define F2(p) reinterpret_cast<float2*>(p)
#define CF2(p) reinterpret_cast<const float2*>(p)

// The sizes every kernel shares: the mask's n and first cell lo per axis, the coils, s = 1/G.
struct Geo {
  int n, lo, coils;
  float s;
  __device__ bool inside(int e) const { return e >= lo && e < lo + n; }
};

__device__ __forceinline__ float2 scaled(float2 a, float f) {
  return make_float2(a.x * f, a.y * f);
}
__device__ __forceinline__ float2 mulc(float2 a, float2 b) {  // conj(a) b
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

// The [J][n] row a thread of a row pass works on (S: RowShape; TB rows a block). Threads past the last row
// stay in step on row 0 (ok false) so that every thread reaches the barriers.
template <class S>
struct MaskRow {
  int tb, tid;
  bool ok;
  long index;          // j n + y
  size_t coil_offset;  // j G^2
  size_t pix;          // the row's first cell on the grid, (y + lo) G
  __device__ MaskRow(const Geo& geo, int G) : tb(int(threadIdx.x) / S::T), tid(int(threadIdx.x) % S::T) {
    const long t = long(blockIdx.x) * S::TB + tb;
    ok = t < long(geo.coils) * geo.n;
    index = ok ? t : 0;
    coil_offset = size_t(index / geo.n) * G * G;
    pix = size_t(index % geo.n + geo.lo) * G;
  }
};

// The grid column a thread of a column pass works on (S: ColShape; TB adjacent columns a block, blockIdx.y
// the coil j): its transform tb in the block, its thread tid in that transform, the column x, and the offsets
// of coil j's column x in the [J][n][G] work array (mid) and in a [J][G][G] array (grid).
template <class S>
struct MaskColumn {
  int tb, tid, x;
  size_t mid, grid;
  __device__ MaskColumn(const Geo& geo, int G)
      : tb(int(threadIdx.x) % S::TB),
        tid(int(threadIdx.x) / S::TB),
        x(int(blockIdx.x) * S::TB + tb),
        mid(size_t(blockIdx.y) * geo.n * G + x),
        grid(size_t(blockIdx.y) * G * G + x) {}
};

// 1. blockIdx.x: TB adjacent grid columns; blockIdx.y: coil. mid[j][y][x] = IFFT_y(s W v_j)[y + lo][x].
template <int G>
__global__ void __launch_bounds__(ColShape<G>::threads)
    coil_columns(const float2* __restrict__ v, const float* __restrict__ w, Geo geo,
                 const float2* __restrict__ tw, float2* __restrict__ mid) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = ColShape<G>;
  using L = ColLayout<S::TB>;
  extern __shared__ float2 sh[];
  const MaskColumn<S> k(geo, G);
  const int tb = k.tb, tid = k.tid, x = k.x;
  const float2* src = v + k.grid;
  float2* dst = mid + k.mid;
  fft_transform<G, S::E, true, L>(
      sh + tb, tid, tw,
      [&](int e) { return scaled(src[size_t(e) * G], __ldg(w + size_t(e) * G + x) * geo.s); },
      [&](int e, float2 val) {
        if (geo.inside(e)) dst[size_t(e - geo.lo) * G] = val;
      });
}

// 2. blockIdx.x: TB of the [J][n] rows. The row goes back along x to dc_j; z_j = s (v_rho c_j + rho dc_j)
// at the mask's cells (zero elsewhere) goes forward along x, in place.
template <int G>
__global__ void __launch_bounds__(RowShape<G>::threads)
    derivative_rows(float2* __restrict__ mid, const float2* __restrict__ v_rho,
                    const float2* __restrict__ rho, const float2* __restrict__ coils, Geo geo,
                    const float2* __restrict__ tw) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = RowShape<G>;
  extern __shared__ float2 sh[];
  const MaskRow<S> r(geo, G);
  const bool ok = r.ok;
  const size_t pix = r.pix;
  float2* row = mid + r.index * G;
  const float2* c = coils + r.coil_offset + pix;
  float2* st = sh + r.tb * RowLayout::stride(G);
  const int tid = r.tid;
  fft_transform<G, S::E, true, RowLayout>(
      st, tid, tw, [&](int e) { return ok ? row[e] : make_float2(0.f, 0.f); },
      [&](int e, float2 dc) {
        float2 z = make_float2(0.f, 0.f);
        if (geo.inside(e)) {
          const float2 a = mul(v_rho[pix + e], c[e]), b = mul(rho[pix + e], dc);
          z = make_float2((a.x + b.x) * geo.s, (a.y + b.y) * geo.s);
        }
        st[RowLayout::at(e)] = z;
      });
  __syncthreads();
  fft_transform_shared<G, S::E, false, RowLayout>(st, tid, tw, [&](int e, float2 val) {
    if (ok) row[e] = val;
  });
}

// 3. blockIdx.x: TB adjacent columns; blockIdx.y: coil. The column (its n mask rows; zeros elsewhere) goes
// forward along y, times D's column, back along y; its n mask rows are stored in place.
template <int G>
__global__ void __launch_bounds__(ColShape<G>::threads)
    pattern_columns(float2* __restrict__ mid, const float2* __restrict__ pattern, Geo geo,
                    const float2* __restrict__ tw) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = ColShape<G>;
  using L = ColLayout<S::TB>;
  extern __shared__ float2 sh[];
  const MaskColumn<S> k(geo, G);
  const int tb = k.tb, tid = k.tid, x = k.x;
  float2* col = mid + k.mid;
  float2* st = sh + tb;
  fft_transform<G, S::E, false, L>(
      st, tid, tw, [&](int e) { return geo.inside(e) ? col[size_t(e - geo.lo) * G] : make_float2(0.f, 0.f); },
      [&](int e, float2 val) { st[L::at(e)] = mul(val, __ldg(pattern + size_t(e) * G + x)); });
  __syncthreads();
  fft_transform_shared<G, S::E, true, L>(st, tid, tw, [&](int e, float2 val) {
    if (geo.inside(e)) col[size_t(e - geo.lo) * G] = val;
  });
}

// Step 4's block: TB transforms of G points side by side, one coil each; its shared memory at most the
// transforms' and the sums of a row of n <= G cells for each.
template <int G>
struct AdjointShape : SideBySideShape<G> {
  static constexpr int max_smem = SideBySideShape<G>::fft_smem + SideBySideShape<G>::TB * G * 8;
};

// 4. blockIdx.x: mask row y (grid row y + lo). For each coil j: u_j = IFFT_x(mid[j][y]); the sum
// s sum_j conj(c_j) u_j at the mask's cells gathers in the block (each cell in the thread the store gives
// it, the same for every coil: the element-to-thread mapping does not depend on the data), and the row of
// s conj(rho) u_j (zero outside the mask) goes forward along x, in place. The sums are added in a fixed
// order into out_rho's row (zeros outside the mask).
template <int G>
__global__ void __launch_bounds__(AdjointShape<G>::threads)
    adjoint_rows(float2* __restrict__ mid, const float2* __restrict__ rho, const float2* __restrict__ coils,
                 Geo geo, const float2* __restrict__ tw, float2* __restrict__ out_rho) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = AdjointShape<G>;
  extern __shared__ float2 sh[];
  float2* acc = sh + S::TB * RowLayout::stride(G);
  const int l = threadIdx.x, tb = l / S::T, tid = l % S::T;
  const int y = int(blockIdx.x);
  const size_t pix = size_t(y + geo.lo) * G;
  float2* st = sh + tb * RowLayout::stride(G);
  float2* a = acc + tb * geo.n;
  for (int e = tid; e < geo.n; e += S::T) a[e] = make_float2(0.f, 0.f);
  __syncthreads();
  for (int j0 = 0; j0 < geo.coils; j0 += S::TB) {
    const int j = j0 + tb;
    const bool ok = j < geo.coils;
    float2* row = mid + (size_t(ok ? j : 0) * geo.n + y) * G;
    const float2* c = coils + size_t(ok ? j : 0) * G * G + pix;
    fft_transform<G, S::E, true, RowLayout>(
        st, tid, tw, [&](int e) { return ok ? row[e] : make_float2(0.f, 0.f); },
        [&](int e, float2 u) {
          float2 r = make_float2(0.f, 0.f);
          if (geo.inside(e)) {
            const float2 p = mulc(c[e], u);
            a[e - geo.lo].x += p.x;
            a[e - geo.lo].y += p.y;
            r = scaled(mulc(rho[pix + e], u), geo.s);
          }
          st[RowLayout::at(e)] = r;
        });
    __syncthreads();
    fft_transform_shared<G, S::E, false, RowLayout>(st, tid, tw, [&](int e, float2 val) {
      if (ok) row[e] = val;
    });
  }
  __syncthreads();
  for (int e = l; e < G; e += S::threads) {
    float2 sum = make_float2(0.f, 0.f);
    if (geo.inside(e)) {
      for (int k = 0; k < S::TB; ++k) {
        sum.x += acc[k * geo.n + e - geo.lo].x;
        sum.y += acc[k * geo.n + e - geo.lo].y;
      }
    }
    out_rho[pix + e] = scaled(sum, geo.s);
  }
}

// 5. blockIdx.x: TB adjacent columns; blockIdx.y: coil. out_j[:][x] = s W FFT_y(mid[j][:][x], the mask's
// rows); coil 0's blocks zero out_rho's column outside the mask's rows.
template <int G>
__global__ void __launch_bounds__(ColShape<G>::threads)
    adjoint_columns(const float2* __restrict__ mid, const float* __restrict__ w, Geo geo,
                    const float2* __restrict__ tw, float2* __restrict__ out_coils,
                    float2* __restrict__ out_rho) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = ColShape<G>;
  using L = ColLayout<S::TB>;
  extern __shared__ float2 sh[];
  const MaskColumn<S> k(geo, G);
  const int tb = k.tb, tid = k.tid, x = k.x;
  const float2* col = mid + k.mid;
  float2* dst = out_coils + k.grid;
  fft_transform<G, S::E, false, L>(
      sh + tb, tid, tw,
      [&](int e) { return geo.inside(e) ? col[size_t(e - geo.lo) * G] : make_float2(0.f, 0.f); },
      [&](int e, float2 val) { dst[size_t(e) * G] = scaled(val, __ldg(w + size_t(e) * G + x) * geo.s); });
  if (blockIdx.y == 0)
    for (int y = tid; y < G; y += S::T)
      if (!geo.inside(y)) out_rho[size_t(y) * G + x] = make_float2(0.f, 0.f);
}

// The linearization's rows: blockIdx.x: TB of the [J][n] rows of step 1's output; each goes back along x and
// its mask cells are stored as the coil image's.
template <int G>
__global__ void __launch_bounds__(RowShape<G>::threads)
    coil_rows(const float2* __restrict__ mid, Geo geo, const float2* __restrict__ tw,
              float2* __restrict__ coils) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = RowShape<G>;
  extern __shared__ float2 sh[];
  const MaskRow<S> r(geo, G);
  const bool ok = r.ok;
  const float2* row = mid + r.index * G;
  float2* dst = coils + r.coil_offset + r.pix;
  fft_transform<G, S::E, true, RowLayout>(
      sh + r.tb * RowLayout::stride(G), r.tid, tw, [&](int e) { return ok ? row[e] : make_float2(0.f, 0.f); },
      [&](int e, float2 val) {
        if (ok && geo.inside(e)) dst[e] = val;
      });
}

// The gradient's rows: blockIdx.x: TB of the [J][n] rows; row y of coil j is M rho c_j (zero outside the
// mask) transformed forward along x, stored whole.
template <int G>
__global__ void __launch_bounds__(RowShape<G>::threads)
    image_rows(const float2* __restrict__ rho, const float2* __restrict__ coils, Geo geo,
               const float2* __restrict__ tw, float2* __restrict__ mid) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = RowShape<G>;
  extern __shared__ float2 sh[];
  const MaskRow<S> r(geo, G);
  const bool ok = r.ok;
  const size_t pix = r.pix;
  const float2* c = coils + r.coil_offset + pix;
  float2* dst = mid + r.index * G;
  fft_transform<G, S::E, false, RowLayout>(
      sh + r.tb * RowLayout::stride(G), r.tid, tw,
      [&](int e) { return ok && geo.inside(e) ? mul(rho[pix + e], c[e]) : make_float2(0.f, 0.f); },
      [&](int e, float2 val) {
        if (ok) dst[e] = val;
      });
}

// The gradient's columns: blockIdx.x: TB adjacent columns; blockIdx.y: coil. The column (its n mask rows)
// goes forward along y; r = y - s D v is stored and goes back along y, its n mask rows stored in place.
template <int G>
__global__ void __launch_bounds__(ColShape<G>::threads)
    residual_columns(float2* __restrict__ mid, const float2* __restrict__ pattern,
                     const float2* __restrict__ y, Geo geo, const float2* __restrict__ tw,
                     float2* __restrict__ r) {
  gpu::wait_for_previous();  // launched dependent: the kernels before have finished
  using S = ColShape<G>;
  using L = ColLayout<S::TB>;
  extern __shared__ float2 sh[];
  const MaskColumn<S> k(geo, G);
  const int tb = k.tb, tid = k.tid, x = k.x;
  float2* col = mid + k.mid;
  const size_t at = k.grid;
  float2* st = sh + tb;
  fft_transform<G, S::E, false, L>(
      st, tid, tw, [&](int e) { return geo.inside(e) ? col[size_t(e - geo.lo) * G] : make_float2(0.f, 0.f); },
      [&](int e, float2 val) {
        const float2 f = scaled(mul(val, __ldg(pattern + size_t(e) * G + x)), geo.s);
        const float2 d = y[at + size_t(e) * G];
        const float2 res = make_float2(d.x - f.x, d.y - f.y);
        r[at + size_t(e) * G] = res;
        st[L::at(e)] = res;
      });
  __syncthreads();
  fft_transform_shared<G, S::E, true, L>(st, tid, tw, [&](int e, float2 val) {
    if (geo.inside(e)) col[size_t(e - geo.lo) * G] = val;
  });
}

template <class K>
void allow_smem(K kernel, int bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// The launches for the grid's size G (a template: the engine's transforms are unrolled per size).
template <int G>
struct Launch {
  using C = ColShape<G>;
  using R = RowShape<G>;
  using A = AdjointShape<G>;
  cudaStream_t stream;
  Geo geo;
  const float2* tw;
  float2* mid;
  dim3 cols() const { return dim3(unsigned(G / C::TB), unsigned(geo.coils)); }
  unsigned row_blocks() const { return unsigned((long(geo.coils) * geo.n + R::TB - 1) / R::TB); }
  // Step 1 on the unknowns v (their coil part): mid = the weighted coils back along y, the mask's rows.
  void coil_columns(const float* w, const cfloat* v) const {
    gpu::launch_dependent("nlinv coil_columns", radstream::coil_columns<G>, cols(), C::threads, C::smem,
                          stream, CF2(v + std::size_t(G) * G), w, geo, tw, mid);
  }
  // Steps 4 and 5: b = DG^H of what mid holds (back along y already, the mask's rows).
  void adjoint(const NlinvFusedCuda::Point& at, cfloat* b) const {
    const std::size_t px = std::size_t(G) * G;
    const int adj_smem = A::fft_smem + A::TB * geo.n * 8;
    gpu::launch_dependent("nlinv adjoint_rows", adjoint_rows<G>, unsigned(geo.n), A::threads, adj_smem,
                          stream, mid, CF2(at.rho), CF2(at.coils), geo, tw, F2(b));
    gpu::launch_dependent("nlinv adjoint_columns", adjoint_columns<G>, cols(), C::threads, C::smem, stream,
                          mid, at.weight, geo, tw, F2(b + px), F2(b));
  }
};

template <int G>
Launch<G> launches(gpu::StreamRef stream, int n, int coils, const cfloat* tw, cfloat* mid) {
  return {static_cast<cudaStream_t>(stream), Geo{n, (G - n) / 2, coils, 1.f / float(G)}, CF2(tw), F2(mid)};
}

}  // namespace

bool NlinvFusedCuda::supports(int grid) {
  return customfft::supported(grid);
}

NlinvFusedCuda::NlinvFusedCuda(int matrix, int grid, int coils, gpu::StreamRef stream)
    : n_(matrix), g_(grid), j_(coils), stream_(stream) {
  if (!supports(grid) || matrix < 2 || matrix > grid || (grid - matrix) % 2 || coils < 1)
    throw ConfigError(
        "nlinv: the custom-FFT model takes a power-of-two grid of 64..2048 points "
        "holding the matrix; grid " +
        std::to_string(grid) + ", matrix " + std::to_string(matrix) + ", coils " + std::to_string(coils));
  const auto tw = twiddle_table(grid);
  tw_ = DeviceBuffer<cfloat>(Extents{tw.size()});
  mid_ = DeviceBuffer<cfloat>(Extents{std::size_t(coils), std::size_t(matrix), std::size_t(grid)});
  gpu::copy_to_device(tw_.data(), tw.data(), tw.size() * sizeof(cfloat), stream);
  dispatch_size(grid, [&]<int G>() {
    allow_smem(coil_columns<G>, ColShape<G>::smem);
    allow_smem(derivative_rows<G>, RowShape<G>::smem);
    allow_smem(pattern_columns<G>, ColShape<G>::smem);
    allow_smem(adjoint_rows<G>, AdjointShape<G>::max_smem);
    allow_smem(adjoint_columns<G>, ColShape<G>::smem);
    allow_smem(coil_rows<G>, RowShape<G>::smem);
    allow_smem(image_rows<G>, RowShape<G>::smem);
    allow_smem(residual_columns<G>, ColShape<G>::smem);
  });
  gpu::synchronize(stream);  // the host table above is a temporary
}

void NlinvFusedCuda::normal(const Point& at, const cfloat* v, cfloat* out) {
  dispatch_size(g_, [&]<int G>() {
    const auto k = launches<G>(stream_, n_, j_, tw_.data(), mid_.data());
    using C = typename Launch<G>::C;
    using R = typename Launch<G>::R;
    k.coil_columns(at.weight, v);
    gpu::launch_dependent("nlinv derivative_rows", derivative_rows<G>, k.row_blocks(), R::threads, R::smem,
                          k.stream, k.mid, CF2(v), CF2(at.rho), CF2(at.coils), k.geo, k.tw);
    gpu::launch_dependent("nlinv pattern_columns", pattern_columns<G>, k.cols(), C::threads, C::smem,
                          k.stream, k.mid, CF2(at.pattern), k.geo, k.tw);
    k.adjoint(at, out);
  });
}

void NlinvFusedCuda::linearize(const float* weight, const cfloat* x, cfloat* coils) {
  dispatch_size(g_, [&]<int G>() {
    const auto k = launches<G>(stream_, n_, j_, tw_.data(), mid_.data());
    using R = typename Launch<G>::R;
    k.coil_columns(weight, x);
    gpu::launch_dependent("nlinv coil_rows", coil_rows<G>, k.row_blocks(), R::threads, R::smem, k.stream,
                          k.mid, k.geo, k.tw, F2(coils));
  });
}

void NlinvFusedCuda::gradient(const Point& at, const cfloat* y, cfloat* r, cfloat* b) {
  dispatch_size(g_, [&]<int G>() {
    const auto k = launches<G>(stream_, n_, j_, tw_.data(), mid_.data());
    using C = typename Launch<G>::C;
    using R = typename Launch<G>::R;
    gpu::launch_dependent("nlinv image_rows", image_rows<G>, k.row_blocks(), R::threads, R::smem, k.stream,
                          CF2(at.rho), CF2(at.coils), k.geo, k.tw, k.mid);
    gpu::launch_dependent("nlinv residual_columns", residual_columns<G>, k.cols(), C::threads, C::smem,
                          k.stream, k.mid, CF2(at.pattern), CF2(y), k.geo, k.tw, F2(r));
    k.adjoint(at, b);
  });
}

}  // namespace radstream
