// Seed 001's off-resonance term through a time-segmented approximation on a fast field-free operator F (the
// NUFFT of the live path, or the exact F): with L segment times t_l spread evenly over the samples' times,
//   exp(-2 pi i fm_v t_m) ~ sum_l b_l(t_m) exp(-2 pi i fm_v t_l),
//   G x = sum_l b_l o F(e_l o x),   G^H y = sum_l conj(e_l) o F^H(b_l o y),   e_l = exp(-2 pi i fm t_l),
// b_l the linear-interpolation (hat) weights between neighbouring segment times (they sum to 1; one segment:
// b = 1 at the mean time). The error falls as (2 pi fm dt)^2 with dt the segment spacing. The susceptibility
// gradients' sinc terms are not approximated here (they need the exact operators). Nothing is allocated after
// construction. CUDA twin: TimeSegmentedCuda (CUDA builds only).
#pragma once
#include <memory>
#include <vector>

#include "linalg/linear_operator.hpp"

namespace radstream {

struct TimeSegments {
  std::vector<float> times;    // L segment times (s)
  std::vector<float> weights;  // [L][M] interpolation weights
};
// Throws ConfigError for segments < 1 or > 64, InputError for a non-finite time.
TimeSegments make_time_segments(const std::vector<float>& t, int segments);
// [L][voxels] exp(-2 pi i fm_v t_l), the phase reduced to [-0.5, 0.5] cycles in double.
std::vector<cfloat> segment_phasors(const std::vector<float>& fm, const std::vector<float>& times);

class TimeSegmentedCpu final : public LinearOperator {
 public:
  // f: voxels -> samples (field-free; multi-coil: [coils][samples]); fm: per voxel (Hz); t: per sample of one
  // coil (s), repeated for every coil.
  TimeSegmentedCpu(std::shared_ptr<LinearOperator> f, const std::vector<float>& fm,
                   const std::vector<float>& t, int segments);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;

 private:
  std::shared_ptr<LinearOperator> f_;
  TimeSegments seg_;
  std::vector<cfloat> e_;  // [L][voxels] exp(-2 pi i fm t_l), made once
  std::vector<cfloat> tx_, ty_;
};

class TimeSegmentedCuda final : public LinearOperator {
 public:
  TimeSegmentedCuda(std::shared_ptr<LinearOperator> f, const std::vector<float>& fm,
                    const std::vector<float>& t, int segments, gpu::StreamRef stream);
  gpu::StreamRef stream() const override { return stream_; }
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;

 private:
  std::shared_ptr<LinearOperator> f_;
  gpu::StreamRef stream_;
  int L_ = 0;
  long long Mt_ = 0;  // samples per coil (the times' count)
  DeviceBuffer<float> d_b_;
  DeviceBuffer<cfloat> d_e_, d_tx_, d_ty_;  // d_e_: [L][voxels] the segments' phasors, made once
  const cfloat* e(int l) const { return d_e_.data() + std::size_t(l) * domain().size(); }
};

}  // namespace radstream
