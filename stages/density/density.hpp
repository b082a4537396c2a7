// Density compensation: weights each sample by the area of k-space it represents (cycles/pixel squared), so
// that the weights of a full radial set add up to the area of the sampled disc (pi / 4) and the adjoint
// reproduces image intensities.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "core/enum_table.hpp"
#include "stage/stage.hpp"

namespace radstream {

enum class DcfMethod {
  None,     // all weights 1
  Ramp,     // |k| dk pi / P: the plain ramp, zero at the centre sample
  RampDc,   // the ramp with the centre sample given the area of its disc
  Voronoi,  // analytic Voronoi areas of radial samples: angular gaps of the actual spoke angles x radial
            // extent
};
inline constexpr EnumTable<DcfMethod, 4> kDcfMethods{"density compensation",
                                                     {{{DcfMethod::None, "none"},
                                                       {DcfMethod::Ramp, "ramp"},
                                                       {DcfMethod::RampDc, "ramp-dc"},
                                                       {DcfMethod::Voronoi, "voronoi"}}}};
inline DcfMethod parse_dcf(const std::string& name) {
  return kDcfMethods.parse(name);
}
inline std::string to_string(DcfMethod v) {
  return kDcfMethods.name(v);
}

struct DensityParams {
  DcfMethod method = DcfMethod::RampDc;

  template <class V>
  void visit(V& v) {
    v.choice("dcf", method, kDcfMethods, "density compensation");
  }
};

// Weights of every sample of a frame, from its trajectory ([spokes][samples][2], cycles/pixel) into w
// ([spokes][samples]). Works for any radial set: each spoke's direction and sample spacing come from its
// coordinates, so shifted (gradient-delay corrected) and unevenly spaced angle sets are handled.
void compute_density_weights(DcfMethod method, std::span<const float> traj, int spokes, int samples,
                             std::span<float> w);

std::unique_ptr<Stage> make_density_cpu(const DensityParams& p);
std::unique_ptr<Stage> make_density_cuda(const DensityParams& p);  // CUDA builds only

}  // namespace radstream
