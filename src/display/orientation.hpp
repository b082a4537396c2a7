// How an image is turned for display: an optional transpose, then optional left-right and up-down flips, on
// top of radstream's one convention (README "Orientation": x = kx = BART dim 0 to the right, y = ky = dim 1
// downward, row 0 at the top). The viewer applies it to the pixels before upload, so the cursor read-out, the
// snapshot and the tip marker all see the image as shown, and labels each edge with the axis that points
// there.
#pragma once
#include <array>
#include <span>
#include <string>
#include <vector>

namespace radstream::display {

struct Orientation {
  bool transpose = false;  // first: swap x and y
  bool flip_x = false;     // then mirror left-right on screen
  bool flip_y = false;     // then mirror up-down on screen
  bool identity() const { return !transpose && !flip_x && !flip_y; }
};

struct Pixel {
  int x = 0, y = 0;
};

// The source pixel drawn at screen pixel (x, y) of an n x n image, and the inverse.
Pixel source_of(Pixel screen, int n, const Orientation& o);
Pixel screen_of(Pixel source, int n, const Orientation& o);

// out = the n x n image `in` (x fastest, row 0 at the top) as it appears on screen.
void orient(std::span<const float> in, int n, const Orientation& o, std::vector<float>& out);

// The image axis pointing to each screen edge, e.g. right "+x", left "-x", bottom "+y", top "-y" unturned.
struct EdgeLabels {
  std::string right, left, bottom, top;
};
EdgeLabels edge_labels(const Orientation& o);

// One line for overlays and the screenshot JSON: "x right, y down" / "y right, x up (transposed, flipped)".
std::string describe(const Orientation& o);

}  // namespace radstream::display
