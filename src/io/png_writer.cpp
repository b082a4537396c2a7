#include "io/png_writer.hpp"

#include <fmt/format.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace radstream {

void write_png_grey(const std::string& path, std::span<const float> pixels, int width, int height, float lo,
                    float hi) {
  if (width <= 0 || height <= 0 || pixels.size() != std::size_t(width) * height)
    throw IoError(
        fmt::format("{}: image of {} pixels does not match {}x{}", path, pixels.size(), width, height));
  std::vector<unsigned char> bytes(pixels.size());
  const float scale = hi > lo ? 255.f / (hi - lo) : 0.f;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const float v = std::isfinite(pixels[i]) ? (pixels[i] - lo) * scale : 0.f;
    bytes[i] = static_cast<unsigned char>(std::clamp(v + 0.5f, 0.f, 255.f));
  }
  if (!stbi_write_png(path.c_str(), width, height, 1, bytes.data(), width))
    throw IoError(fmt::format("{}: cannot write the PNG file", path));
}

}  // namespace radstream
