#include <cmath>

#include "coil_combine/coil_combine.hpp"
#include "core/error.hpp"

namespace radstream {

Extents combined_extents(const Extents& input) {
  if (input.rank != 3) throw ConfigError("coil_combine: expects [coils][N][N], got " + input.str());
  return Extents{input[1], input[2]};
}

namespace {

class CoilCombineCpu final : public Stage {
 public:
  explicit CoilCombineCpu(const CoilCombineParams& p) : p_(p) {}
  std::string name() const override { return "coil_combine"; }

  Extents configure(const Geometry&, const Extents& input, Context&) override {
    in_ext_ = input;
    out_ext_ = combined_extents(input);
    return out_ext_;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("coil_combine", "input", in, in_ext_, Location::Host);
    expect_view("coil_combine", "output", out, out_ext_, Location::Host);
    const long coils = long(in_ext_[0]);
    const long pixels = long(in_ext_[1] * in_ext_[2]);
    const cfloat* src = in.data;
    cfloat* dst = out.data;
#pragma omp parallel for schedule(static)
    for (long p = 0; p < pixels; ++p) {
      float s = 0.f;
      for (long c = 0; c < coils; ++c) s += std::norm(src[c * pixels + p]);
      dst[p] = cfloat(std::sqrt(s), 0.f);
    }
  }

 private:
  CoilCombineParams p_;
  Extents in_ext_, out_ext_;
};

}  // namespace

std::unique_ptr<Stage> make_coil_combine_cpu(const CoilCombineParams& p) {
  return std::make_unique<CoilCombineCpu>(p);
}

}  // namespace radstream
