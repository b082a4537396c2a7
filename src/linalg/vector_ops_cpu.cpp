#include <algorithm>
#include <array>
#include <cstring>

#include "core/error.hpp"
#include "linalg/vector_ops.hpp"

namespace radstream {
namespace {

class VectorOpsCpu final : public VectorOps {
  static constexpr int kDotBlocks = 64;

 public:
  Location location() const override { return Location::Host; }

  void copy(cfloat* dst, const cfloat* src, std::size_t n) override {
    if (dst != src) std::memcpy(static_cast<void*>(dst), src, n * sizeof(cfloat));
  }
  void zero(cfloat* x, std::size_t n) override { std::memset(static_cast<void*>(x), 0, n * sizeof(cfloat)); }
  void fill(cfloat* x, std::size_t n, cfloat v) override {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < long(n); ++i) x[i] = v;
  }
  void scale(cfloat* x, std::size_t n, float a) override {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < long(n); ++i) x[i] *= a;
  }
  void to_host(cfloat* host, const cfloat* src, std::size_t n) override {
    copy(host, src, n);
  }

  void axpy(cfloat* y, float a, const cfloat* x, std::size_t n) override {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < long(n); ++i) y[i] += a * x[i];
  }

  void rsub(cfloat* y, const cfloat* x, std::size_t n) override {
#pragma omp parallel for schedule(static)
    for (long i = 0; i < long(n); ++i) y[i] = x[i] - y[i];
  }

  // Re <x, y> in double, the same bits whatever the thread count or timing: kDotBlocks fixed blocks summed in
  // parallel, then added in block order (an OpenMP reduction adds the threads' partials in the order they
  // finish, which moves a float CG's iterates run to run).
  void dot_re(const cfloat* x, const cfloat* y, std::size_t n, int slot) override {
    at(slot) = blocked_sum(n, [&](std::size_t i) {
      return double(x[i].real()) * y[i].real() + double(x[i].imag()) * y[i].imag();
    });
  }

  void cg_start(cfloat* r, cfloat* p, const cfloat* b, std::size_t n, int slot) override {
    at(slot) = blocked_sum(n, [&](std::size_t i) {
      r[i] = p[i] = b[i];
      return double(b[i].real()) * b[i].real() + double(b[i].imag()) * b[i].imag();
    });
  }

  void axpy_dot(cfloat* y, float a, const cfloat* x, std::size_t n, int slot) override {
    at(slot) = blocked_sum(n, [&](std::size_t i) {
      y[i] += a * x[i];
      return double(x[i].real()) * y[i].real() + double(x[i].imag()) * y[i].imag();
    });
  }

  void cg_step_norm(cfloat* x, cfloat* r, const cfloat* p, const cfloat* q, std::size_t n, int rr, int pq,
                    int rr_new, double limit) override {
    const float alpha = at(pq) > 0 && at(rr) > limit ? float(at(rr) / at(pq)) : 0.f;
    at(rr_new) = blocked_sum(n, [&](std::size_t i) {
      x[i] += alpha * p[i];
      r[i] -= alpha * q[i];
      return double(r[i].real()) * r[i].real() + double(r[i].imag()) * r[i].imag();
    });
  }

  void post(int slot, int entry) override {
    posted_.at(std::size_t(entry)) = at(slot);
  }
  double fetch(int entry) override {
    return posted_.at(std::size_t(entry));
  }

  void cg_direction(cfloat* p, const cfloat* r, std::size_t n, int rr_new, int rr_old) override {
    const float beta = at(rr_old) > 0 ? float(at(rr_new) / at(rr_old)) : 0.f;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < long(n); ++i) p[i] = r[i] + beta * p[i];
  }

  double read(int slot) override {
    return at(slot);
  }
  void set_slots(int first, const double* values, int count) override {
    for (int i = 0; i < count; ++i) at(first + i) = values[i];
  }
  void read_slots(int first, double* values, int count) override {
    for (int i = 0; i < count; ++i) values[i] = at(first + i);
  }
  void read2(int a, int b, double& va, double& vb) override {
    va = at(a);
    vb = at(b);
  }

 private:
  std::array<double, kSlots> s_{};
  std::array<double, kPosts> posted_{};

  // sum over i < n of term(i) (which may also update element i), in kDotBlocks fixed blocks.
  template <class Term>
  static double blocked_sum(std::size_t n, Term term) {
    std::array<double, kDotBlocks> part{};
    const std::size_t len = (n + kDotBlocks - 1) / kDotBlocks;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < kDotBlocks; ++b) {
      double s = 0;
      const std::size_t hi = std::min(n, (std::size_t(b) + 1) * len);
      for (std::size_t i = std::size_t(b) * len; i < hi; ++i) s += term(i);
      part[std::size_t(b)] = s;
    }
    double s = 0;
    for (double v : part) s += v;
    return s;
  }
  double& at(int slot) {
    if (slot < 0 || slot >= kSlots) throw InputError("vector ops: scalar slot out of range");
    return s_[slot];
  }
};

}  // namespace

void VectorOps::cg_loop_control(gpu::LoopHandle, const CgLoopSlots&, const CgStop&, int, bool, bool,
                                const DeviceDeadline&) {
  throw ConfigError("vector ops: device loops run on a GPU only (these vectors cannot run one)");
}
void VectorOps::deadline_start(const DeviceDeadline&) {
  throw ConfigError("vector ops: device deadlines run on a GPU only");
}
void VectorOps::deadline_gate(gpu::LoopHandle, const DeviceDeadline&) {
  throw ConfigError("vector ops: device deadlines run on a GPU only");
}

std::unique_ptr<VectorOps> make_vector_ops_cpu() {
  return std::make_unique<VectorOpsCpu>();
}

#ifndef RADSTREAM_HAVE_CUDA
std::unique_ptr<VectorOps> make_vector_ops_cuda(gpu::StreamRef) {
  throw CudaError("make_vector_ops_cuda", "this build has no CUDA backend", __FILE__, __LINE__);
}
#endif

}  // namespace radstream
