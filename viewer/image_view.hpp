// The image on screen: a float texture drawn by the shaders of shaders/ into a rectangle of the window, with
// window/level, gamma, colour map, zoom and pan, aspect kept. Touches GL: use on the render thread only.
#pragma once
#include <vector>

namespace radstream::viewer {

struct Display {
  float low = 0.f, high = 1.f;  // window: values mapped to black and white
  float gamma = 1.f;
  int colormap = 0;  // 0 grey, 1 hot
  bool auto_window = true;
  float zoom = 1.f;            // 1: the image fits the area
  float pan_x = 0, pan_y = 0;  // in image widths
};

struct Rect {
  float x = 0, y = 0, w = 0, h = 0;  // pixels, origin top-left
};

class ImageView {
 public:
  ImageView();  // compiles the shaders; throws std::runtime_error with the GL log
  ~ImageView();
  ImageView(const ImageView&) = delete;
  ImageView& operator=(const ImageView&) = delete;

  void upload(const std::vector<float>& pixels, int n);  // n x n, row 0 at the top
  int size() const { return n_; }
  // Draws into `area` of a framebuffer of fb_w x fb_h pixels.
  void draw(const Display& d, const Rect& area, int fb_w, int fb_h) const;
  // The on-screen rectangle of the image (zoom, pan, aspect) inside `area`.
  Rect placement(const Display& d, const Rect& area) const;

 private:
  unsigned prog_ = 0, vao_ = 0, tex_ = 0;
  int n_ = 0;
};

}  // namespace radstream::viewer
