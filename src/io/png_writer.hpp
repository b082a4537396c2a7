// 8-bit greyscale PNG output of a real image, windowed to given limits.
#pragma once
#include <span>
#include <string>

namespace radstream {

// Writes width x height pixels (row 0 at the top, x fastest) mapping [lo, hi] to 0..255. Throws IoError.
void write_png_grey(const std::string& path, std::span<const float> pixels, int width, int height, float lo,
                    float hi);

}  // namespace radstream
