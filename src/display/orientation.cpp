#include "display/orientation.hpp"

#include <algorithm>
#include <stdexcept>

namespace radstream::display {

Pixel source_of(Pixel s, int n, const Orientation& o) {
  const int x = o.flip_x ? n - 1 - s.x : s.x;
  const int y = o.flip_y ? n - 1 - s.y : s.y;
  return o.transpose ? Pixel{y, x} : Pixel{x, y};
}

Pixel screen_of(Pixel src, int n, const Orientation& o) {
  const Pixel t = o.transpose ? Pixel{src.y, src.x} : src;
  return {o.flip_x ? n - 1 - t.x : t.x, o.flip_y ? n - 1 - t.y : t.y};
}

void orient(std::span<const float> in, int n, const Orientation& o, std::vector<float>& out) {
  if (n < 0 || in.size() < std::size_t(n) * std::size_t(n))
    throw std::invalid_argument("orient: the image has " + std::to_string(in.size()) +
                                " pixels, fewer than " + std::to_string(n) + "^2");
  out.resize(std::size_t(n) * std::size_t(n));
  if (o.identity()) {
    std::copy_n(in.begin(), out.size(), out.begin());
    return;
  }
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const Pixel s = source_of({x, y}, n, o);
      out[std::size_t(y) * n + x] = in[std::size_t(s.y) * n + s.x];
    }
}

EdgeLabels edge_labels(const Orientation& o) {
  // A step right on screen moves along source axis (transpose ? y : x), forwards unless flipped.
  const char* horizontal = o.transpose ? "y" : "x";
  const char* vertical = o.transpose ? "x" : "y";
  EdgeLabels e;
  e.right = std::string(o.flip_x ? "-" : "+") + horizontal;
  e.left = std::string(o.flip_x ? "+" : "-") + horizontal;
  e.bottom = std::string(o.flip_y ? "-" : "+") + vertical;
  e.top = std::string(o.flip_y ? "+" : "-") + vertical;
  return e;
}

std::string describe(const Orientation& o) {
  const EdgeLabels e = edge_labels(o);
  const auto axis = [](const std::string& toward_plus_edge, const char* plus_edge, const char* minus_edge) {
    return std::string(1, toward_plus_edge[1]) + " " + (toward_plus_edge[0] == '+' ? plus_edge : minus_edge);
  };
  std::string s = axis(e.right, "right", "left") + ", " + axis(e.bottom, "down", "up");
  if (!o.identity()) {
    std::string how;
    if (o.transpose) how += "transposed";
    if (o.flip_x) how += std::string(how.empty() ? "" : ", ") + "flipped left-right";
    if (o.flip_y) how += std::string(how.empty() ? "" : ", ") + "flipped up-down";
    s += " (" + how + ")";
  }
  return s;
}

}  // namespace radstream::display
