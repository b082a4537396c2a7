#include "stage/stage.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace radstream {

double StageSizes::side(double os) const {
  return std::ceil(os * matrix);
}

void expect_view(const char* stage, const char* what, const View<const cfloat>& v, const Extents& ext,
                 Location loc) {
  if (v.data == nullptr) throw InputError(fmt::format("{}: {} is empty", stage, what));
  if (!(v.ext == ext))
    throw InputError(
        fmt::format("{}: {} has extents {}, configured for {}", stage, what, v.ext.str(), ext.str()));
  if (v.loc != loc && !(loc == Location::Host && v.loc == Location::PinnedHost))
    throw InputError(fmt::format("{}: {} is in the wrong memory space", stage, what));
}

}  // namespace radstream
