#include <fmt/format.h>

#include "noncart/kaiser_bessel.hpp"
#include "stages/deapodize/deapodize.hpp"

namespace radstream {

DeapodizeTable make_deapodize_table(int matrix, const NufftKernel& kernel) {
  const KaiserBesselLut lut(kernel.width, kernel.oversampling, kernel.lut_resolution);
  return make_axis_apodization(matrix, oversampled_grid_size(matrix, kernel.oversampling), lut);
}

namespace {

class DeapodizeCpu final : public Stage {
 public:
  explicit DeapodizeCpu(const NufftKernel& k) : k_(k) {}
  std::string name() const override { return "deapodize"; }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    const int G = oversampled_grid_size(g.matrix, k_.oversampling);
    const Extents expect{std::size_t(g.coils), std::size_t(G), std::size_t(G)};
    if (!(input == expect))
      throw ConfigError(fmt::format("deapodize: input {} does not match grid {}", input.str(), expect.str()));
    in_ext_ = input;
    N_ = g.matrix;
    G_ = G;
    table_ = make_deapodize_table(N_, k_);
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(N_), std::size_t(N_)};
    return out_ext_;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("deapodize", "input", in, in_ext_, Location::Host);
    expect_view("deapodize", "output", out, out_ext_, Location::Host);
    const long coils = long(in_ext_[0]);
    const int N = N_, G = G_;
    const int* src = table_.src.data();
    const float* f = table_.factor.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (long c = 0; c < coils; ++c)
      for (int y = 0; y < N; ++y) {
        const cfloat* row = in.data + (std::size_t(c) * G + src[y]) * G;
        cfloat* dst = out.data + (std::size_t(c) * N + y) * N;
        const float fy = f[y];
        for (int x = 0; x < N; ++x) dst[x] = row[src[x]] * (fy * f[x]);
      }
  }

 private:
  NufftKernel k_;
  Extents in_ext_, out_ext_;
  int N_ = 0, G_ = 0;
  DeapodizeTable table_;
};

}  // namespace

std::unique_ptr<Stage> make_deapodize_cpu(const NufftKernel& kernel) {
  return std::make_unique<DeapodizeCpu>(kernel);
}

}  // namespace radstream
