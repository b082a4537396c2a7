#include "display/volume_planes.hpp"

#include <algorithm>

namespace radstream::display {

int stretched_row(int z, int n, int depth) {
  return std::clamp(int((double(z) + 0.5) * n / depth), 0, n - 1);
}

VolumePlanes volume_planes(std::span<const float> vol, int n, int depth, Cursor3 c, bool mip) {
  VolumePlanes p;
  const std::size_t plane = std::size_t(std::max(0, n)) * std::size_t(std::max(0, n));
  if (n < 1 || depth < 1 || vol.size() != plane * std::size_t(depth)) return p;
  c.x = std::clamp(c.x, 0, n - 1);
  c.y = std::clamp(c.y, 0, n - 1);
  c.z = std::clamp(c.z, 0, depth - 1);
  p.n = n;
  const auto at = [&](int z, int y, int x) {
    return vol[(std::size_t(z) * n + std::size_t(y)) * n + std::size_t(x)];
  };
  p.axial.assign(plane, mip ? -1e30f : 0.f);
  // A column's z position (nearest, stretched): row r shows z = r * depth / n.
  std::vector<float> cor(std::size_t(depth) * n, mip ? -1e30f : 0.f), sag(cor);
  for (int z = 0; z < depth; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const float v = at(z, y, x);
        if (mip) {
          float& a = p.axial[std::size_t(y) * n + x];
          a = std::max(a, v);
          float& cr = cor[std::size_t(z) * n + x];
          cr = std::max(cr, v);
          float& sg = sag[std::size_t(z) * n + y];
          sg = std::max(sg, v);
        } else {
          if (z == c.z) p.axial[std::size_t(y) * n + x] = v;
          if (y == c.y) cor[std::size_t(z) * n + x] = v;
          if (x == c.x) sag[std::size_t(z) * n + y] = v;
        }
      }
  p.coronal.resize(plane);
  p.sagittal.resize(plane);
  for (int r = 0; r < n; ++r) {
    const int z = std::min(depth - 1, int(double(r) * depth / n));
    std::copy_n(cor.begin() + long(std::size_t(z) * n), n, p.coronal.begin() + long(std::size_t(r) * n));
    std::copy_n(sag.begin() + long(std::size_t(z) * n), n, p.sagittal.begin() + long(std::size_t(r) * n));
  }
  return p;
}

}  // namespace radstream::display
