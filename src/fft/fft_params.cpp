#include "fft/fft_params.hpp"

#include "core/error.hpp"

namespace radstream {}  // namespace radstream
