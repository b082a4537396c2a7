#include "core/error.hpp"
#include "stages/fbp/fbp.hpp"

namespace radstream {

int fbp_fft_size(int samples) {
  int p = 1;
  while (p < 2 * samples) p *= 2;
  return p;
}

}  // namespace radstream
