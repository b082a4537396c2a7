// A build without CUDA: ESPIRiT's GPU half is absent (the backend resolves to the CPU before it is asked
// for).
#include "core/error.hpp"
#include "recon/espirit.hpp"

namespace radstream {

EspiritMaps espirit_maps_cuda(const EspiritSubspace&, const EspiritParams&) {
  throw CudaError("espirit_maps_cuda", "this build has no CUDA backend", __FILE__, __LINE__);
}

}  // namespace radstream
