// Window/level presets for the display of magnitude images. "auto" spans the 1st..99.5th percentile of the
// whole image; "object" the same percentiles inside the object with its rim peeled off, so that a bright rim
// (the phantom's skull ring, subcutaneous fat, tissue next to a surface coil) no longer sets white and the
// contrast inside - and a bright catheter tip, which saturates - shows; "full" spans min..max.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/enum_table.hpp"

namespace radstream::display {

enum class WindowPreset { Auto, Object, Full };
inline constexpr EnumTable<WindowPreset, 3> kWindowPresets{
    "window preset",
    {{{WindowPreset::Auto, "auto"}, {WindowPreset::Object, "object"}, {WindowPreset::Full, "full"}}}};

struct WindowLevel {
  float low = 0.f, high = 1.f;  // the values shown black and white
};

// The window of preset p for the n x n magnitude image px. Object falls back to Auto when the image has no
// interior (empty or noise only). low is never below 0 and high is always above low.
WindowLevel preset_window(std::span<const float> px, int n, WindowPreset p);

// The object's interior, 1 inside: pixels whose 3 x 3 mean is above 25 % of the 99th percentile, holes filled
// (what the background cannot reach from the border), then every pixel within `rim` pixels (3-4 chamfer
// distance) of the outside removed; rim 0 = n / 24, at least 2.
std::vector<std::uint8_t> object_interior(std::span<const float> px, int n, int rim = 0);

// The "object" window from an interior already computed (the tip finder has one): 1st..99.5th percentile
// inside, the whole image's when the interior is too small.
WindowLevel object_window(std::span<const float> px, const std::vector<std::uint8_t>& inside);

}  // namespace radstream::display
