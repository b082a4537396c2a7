// The CUDA stages in the registry (compiled only in CUDA builds).
#include "cg_sense/cg_sense.hpp"
#include "coil_combine/coil_combine.hpp"
#include "deapodize/deapodize.hpp"
#include "density/density.hpp"
#include "fbp/fbp.hpp"
#include "fft/fft.hpp"
#include "gridding/gridding.hpp"
#include "recon/registry.hpp"

namespace radstream {

void register_cuda_stages(Registry& r) {
  r.add("density", Backend::Cuda, [](const ReconParams& p) { return make_density_cuda(p.density); });
  r.add("gridding", Backend::Cuda, [](const ReconParams& p) { return make_gridding_cuda(p.gridding); });
  r.add("fft", Backend::Cuda,
        [](const ReconParams& p) { return make_fft_cuda(p.fft, FftDirection::Inverse); });
  r.add("fft_forward", Backend::Cuda,
        [](const ReconParams& p) { return make_fft_cuda(p.fft, FftDirection::Forward); });
  r.add("fft_deapodize_combine", Backend::Cuda,
        [](const ReconParams& p) { return make_fused_image_cuda(p.gridding.kernel()); });
  r.add("deapodize", Backend::Cuda, [](const ReconParams& p) { return make_deapodize_cuda(p.gridding.kernel()); });
  r.add("fbp_project", Backend::Cuda, [](const ReconParams& p) { return make_fbp_project_cuda(p.fbp, p.fft); });
  r.add("backproject", Backend::Cuda, [](const ReconParams& p) { return make_backproject_cuda(p.fbp); });
  r.add("coil_combine", Backend::Cuda,
        [](const ReconParams& p) { return make_coil_combine_cuda(p.combine); });
  r.add("magnitude", Backend::Cuda, [](const ReconParams&) { return make_magnitude_cuda(); });
  r.add("cg_sense", Backend::Cuda,
        [](const ReconParams& p) { return make_cg_sense_cuda(p.cg, p.gridding.kernel()); });
}

}  // namespace radstream
