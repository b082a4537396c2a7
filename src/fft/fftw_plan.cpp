#include "fft/fftw_plan.hpp"

#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "core/error.hpp"

namespace radstream {

namespace {

std::mutex& planner_mutex() {
  static std::mutex m;  // FFTW's planner is global; this lock only mirrors that fact
  return m;
}

}  // namespace

std::unique_lock<std::mutex> fftw_plan_lock(int threads) {
  std::unique_lock lock(planner_mutex());
  static std::once_flag threads_once;
  std::call_once(threads_once, [] { fftwf_init_threads(); });
  fftwf_plan_with_nthreads(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency())));
  return lock;
}

FftwPlan::FftwPlan(std::vector<int> dims, int batch, FftDirection dir, FftPlanner planner, int threads) {
  if (dims.empty() || dims.size() > 3 || batch < 1)
    throw ConfigError(fmt::format("fft: cannot plan {} transforms of rank {}", batch, dims.size()));
  std::size_t per = 1;
  for (int d : dims) {
    if (d < 1) throw ConfigError(fmt::format("fft: transform extent {} must be >= 1", d));
    per *= std::size_t(d);
  }
  size_ = per * std::size_t(batch);
  HostBuffer<cfloat> scratch(Extents{size_});
  const auto lock = fftw_plan_lock(threads);
  const unsigned flags = planner == FftPlanner::Estimate  ? FFTW_ESTIMATE
                         : planner == FftPlanner::Patient ? FFTW_PATIENT
                                                          : FFTW_MEASURE;
  auto* buf = reinterpret_cast<fftwf_complex*>(scratch.data());
  plan_ =
      fftwf_plan_many_dft(int(dims.size()), dims.data(), batch, buf, nullptr, 1, int(per), buf, nullptr, 1,
                          int(per), dir == FftDirection::Inverse ? FFTW_BACKWARD : FFTW_FORWARD, flags);
  if (!plan_)
    throw ConfigError(fmt::format("fft: FFTW could not plan {} transforms of {} values", batch, per));
}

FftwPlan::~FftwPlan() {
  if (plan_) {
    std::lock_guard lock(planner_mutex());
    fftwf_destroy_plan(plan_);
  }
}

FftwPlan::FftwPlan(FftwPlan&& o) noexcept
    : plan_(std::exchange(o.plan_, nullptr)), size_(std::exchange(o.size_, 0)) {}

FftwPlan& FftwPlan::operator=(FftwPlan&& o) noexcept {
  if (this != &o) {
    if (plan_) {
      std::lock_guard lock(planner_mutex());
      fftwf_destroy_plan(plan_);
    }
    plan_ = std::exchange(o.plan_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void FftwPlan::execute(cfloat* data) const {
  auto* buf = reinterpret_cast<fftwf_complex*>(data);
  fftwf_execute_dft(plan_, buf, buf);
}

}  // namespace radstream
