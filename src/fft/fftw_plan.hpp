// FFTW single-precision plans as a library for stages and operators: a batch of 1-, 2- or 3-D complex
// transforms planned once (the planner is process-wide and not thread-safe, so every plan is made under one
// lock) and executed in place on any 64-byte aligned buffer of the planned shape. Unnormalized; inverse is
// exp(+2 pi i ...), forward exp(-2 pi i ...).
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/enum_table.hpp"

struct fftwf_plan_s;  // FFTW's plan type (fftwf_plan is a pointer to it)

namespace radstream {

enum class FftPlanner { Estimate, Measure, Patient };
inline constexpr EnumTable<FftPlanner, 3> kFftPlanners{"FFTW planner",
                                                       {{{FftPlanner::Estimate, "estimate"},
                                                         {FftPlanner::Measure, "measure"},
                                                         {FftPlanner::Patient, "patient"}}}};
inline FftPlanner parse_fft_planner(const std::string& name) {
  return kFftPlanners.parse(name);
}
inline std::string to_string(FftPlanner v) {
  return kFftPlanners.name(v);
}

enum class FftDirection { Forward, Inverse };

// FFTW's planner is process-wide and not thread-safe: every FFTW plan is made holding this lock (which also
// sets up FFTW's threads once and asks for `threads`, 0 = all).
std::unique_lock<std::mutex> fftw_plan_lock(int threads);

class FftwPlan {
 public:
  FftwPlan() = default;
  // dims: the transform's extents, slowest first (e.g. {G, G} or {Gz, Gy, Gx}); batch transforms stored one
  // after the other. Throws ConfigError when FFTW cannot plan it.
  FftwPlan(std::vector<int> dims, int batch, FftDirection dir, FftPlanner planner, int threads);
  ~FftwPlan();
  FftwPlan(FftwPlan&& o) noexcept;
  FftwPlan& operator=(FftwPlan&& o) noexcept;
  FftwPlan(const FftwPlan&) = delete;
  FftwPlan& operator=(const FftwPlan&) = delete;

  // In place on data (batch * prod(dims) values, 64-byte aligned).
  void execute(cfloat* data) const;
  std::size_t size() const { return size_; }  // values per call
  bool valid() const { return plan_ != nullptr; }

 private:
  fftwf_plan_s* plan_ = nullptr;  // fftwf_plan
  std::size_t size_ = 0;
};

}  // namespace radstream
