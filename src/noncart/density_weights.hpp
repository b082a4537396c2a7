// Density compensation weights of radial samples: the area of k-space each sample represents (cycles/pixel
// squared), so that the weights of a full radial set add up to the area of the sampled disc (pi / 4) and the
// adjoint reproduces image intensities. Shared by the density stage and the density-weighted gridding (which
// applies them inside the spread instead of in a pass over every coil's samples).
#pragma once
#include <span>
#include <string>

#include "core/enum_table.hpp"
#include "gpu/handles.hpp"

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

// Weights of every sample of a frame, from its trajectory ([spokes][samples][2], cycles/pixel) into w
// ([spokes][samples]). Works for any radial set: each spoke's direction and sample spacing come from its
// coordinates, so shifted (gradient-delay corrected) and unevenly spaced angle sets are handled.
void compute_density_weights(DcfMethod method, std::span<const float> traj, int spokes, int samples,
                             std::span<float> w);

// The same on the GPU (CUDA builds only), enqueued on the stream: d_traj and d_w on the device, d_width a
// device scratch of 2 spokes doubles (the half-spokes' angular widths, Voronoi only). Equal to the CPU's to
// float rounding.
void compute_density_weights_cuda(DcfMethod method, const float* d_traj, int spokes, int samples,
                                  double* d_width, float* d_w, gpu::StreamRef stream);

}  // namespace radstream
