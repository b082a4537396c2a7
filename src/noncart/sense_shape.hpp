// The extents the SENSE operators (CPU and GPU twins) share: one image [N][N], or `images` independent ones
// [images][N][N] seen each by its own `coils` (a stack of stars' z positions solved together).
#pragma once
#include <cstddef>
#include <string>

#include "core/buffer.hpp"
#include "core/error.hpp"

namespace radstream {

// images x coils, the operator's channels (its NUFFT batch). Throws ConfigError naming a count below 1.
inline std::size_t sense_channels(int coils, int images) {
  if (coils < 1) throw ConfigError("sense: coils = " + std::to_string(coils) + " must be >= 1");
  if (images < 1) throw ConfigError("sense: images = " + std::to_string(images) + " must be >= 1");
  return std::size_t(coils) * std::size_t(images);
}

inline Extents sense_image_extents(int matrix, int images) {
  const std::size_t n = std::size_t(matrix);
  return images == 1 ? Extents{n, n} : Extents{std::size_t(images), n, n};
}

}  // namespace radstream
