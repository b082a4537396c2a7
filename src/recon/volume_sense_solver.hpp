// The volume CG-SENSE solver for either backend (volume_sense.hpp): Op is SenseOperatorCpu or
// SenseOperatorCuda made with P images. Included by volume_sense.cpp and volume_sense_cuda.cu only.
#pragma once
#include <memory>
#include <string>

#include "core/error.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/vector_ops.hpp"
#include "recon/volume_sense.hpp"

namespace radstream {

template <class Op>
class VolumeSenseSolver final : public VolumeSense {
 public:
  VolumeSenseSolver(const VolumeSenseShape& s, const CgSenseParams& p, std::unique_ptr<Op> op,
                    std::unique_ptr<VectorOps> ops)
      : p_(p),
        n_(std::size_t(s.partitions) * std::size_t(s.matrix) * std::size_t(s.matrix)),
        op_(std::move(op)),
        ops_(std::move(ops)),
        b_(n_, ops_->location()),
        cg_(n_, *ops_, false) {
    const std::string why = volume_sense_refusal(p);
    if (!why.empty()) throw ConfigError("cg-sense over a volume: " + why);
  }

  Location location() const override { return ops_->location(); }

  void set_maps(const cfloat* maps, double peak_power) override {
    op_->set_maps(maps);
    peak_ = peak_power;
  }

  void solve(const cfloat* data, const float* traj, cfloat* x, bool warm) override {
    op_->set_points(traj, nullptr);
    op_->adjoint(data, b_.data());
    CgOptions o;
    o.max_iterations = p_.iterations;
    o.lambda = p_.lambda * op_->weight_sum() * peak_;
    cg_.enqueue(*op_, b_.data(), x, o, warm);
  }

  double residual() override { return cg_.residual(); }

 private:
  CgSenseParams p_;
  std::size_t n_;
  std::unique_ptr<Op> op_;
  std::unique_ptr<VectorOps> ops_;
  Vector b_;
  ConjugateGradient cg_;
  double peak_ = 1.0;
};

}  // namespace radstream
