#include "recon/gpu_warm_up.hpp"

namespace radstream {

double warm_up_gpu_libraries() {
  return 0;
}

}  // namespace radstream
