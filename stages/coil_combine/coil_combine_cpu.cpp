#include <cmath>

#include "core/error.hpp"
#include "stages/coil_combine/coil_combine.hpp"

namespace radstream {

Extents combined_extents(const Geometry& g, const Extents& input, CoilCombineMethod method) {
  if (input.rank != 3) throw ConfigError("coil_combine: expects [coils][N][N], got " + input.str());
  if (g.images == 1) return Extents{input[1], input[2]};
  if (method != CoilCombineMethod::Rss)
    throw ConfigError("coil_combine: " + to_string(method) + " combines one image's coils by its maps; " +
                      g.str() + " holds " + std::to_string(g.images) + " images (use rss)");
  if (input[0] != std::size_t(g.coils))
    throw ConfigError("coil_combine: input " + input.str() + " is not the coil images of " + g.str());
  return Extents{std::size_t(g.images), input[1], input[2]};
}

namespace {

class CoilCombineCpu final : public Stage {
 public:
  explicit CoilCombineCpu(const CoilCombineParams& p) : p_(p) {}
  std::string name() const override { return "coil_combine"; }
  StageSpec spec() const override {
    StageSpec s;
    s.coil_maps = p_.method == CoilCombineMethod::Sense;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    in_ext_ = input;
    out_ext_ = combined_extents(g, input, p_.method);
    images_ = g.images;
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("coil_combine", "input", in, in_ext_, Location::Host);
    expect_view("coil_combine", "output", out, out_ext_, Location::Host);
    const long coils = long(in_ext_[0]) / images_;
    const long pixels = long(in_ext_[1] * in_ext_[2]);
    const cfloat* src = in.data;
    cfloat* dst = out.data;
    if (p_.method == CoilCombineMethod::Sense) {
      expect_view("coil_combine", "coil maps", frame.coil_maps.data, in_ext_, Location::Host);
      const cfloat* maps = frame.coil_maps.data.data;
#pragma omp parallel for schedule(static)
      for (long p = 0; p < pixels; ++p) {
        cfloat num = 0;
        float den = 0.f;
        for (long c = 0; c < coils; ++c) {
          num += std::conj(maps[c * pixels + p]) * src[c * pixels + p];
          den += std::norm(maps[c * pixels + p]);
        }
        dst[p] = p_.keep_phase ? num * sense_combine_scale(den)
                               : cfloat(sense_combine_pixel(num.real(), num.imag(), den), 0.f);
      }
      return;
    }
    // Each image's coils into its own plane (one image unless the geometry holds several).
#pragma omp parallel for schedule(static) collapse(2)
    for (long i = 0; i < images_; ++i)
      for (long p = 0; p < pixels; ++p) {
        const cfloat* first = src + i * coils * pixels;
        float s = 0.f;
        for (long c = 0; c < coils; ++c) s += std::norm(first[c * pixels + p]);
        dst[i * pixels + p] = cfloat(std::sqrt(s), 0.f);
      }
  }

 private:
  CoilCombineParams p_;
  Extents in_ext_, out_ext_;
  long images_ = 1;
};

class MagnitudeCpu final : public Stage {
 public:
  std::string name() const override { return "magnitude"; }
  StageSpec spec() const override {
    StageSpec s;
    s.in_place = true;
    return s;
  }
  Extents configure(const Geometry&, const Extents& input, Context&) override {
    ext_ = input;
    return input;
  }
  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("magnitude", "input", in, ext_, Location::Host);
    expect_view("magnitude", "output", out, ext_, Location::Host);
    const long n = long(ext_.size());
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) out.data[i] = cfloat(std::abs(in.data[i]), 0.f);
  }

 private:
  Extents ext_;
};

}  // namespace

std::unique_ptr<Stage> make_coil_combine_cpu(const CoilCombineParams& p) {
  return std::make_unique<CoilCombineCpu>(p);
}

std::unique_ptr<Stage> make_magnitude_cpu() {
  return std::make_unique<MagnitudeCpu>();
}

}  // namespace radstream
