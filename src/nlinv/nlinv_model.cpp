#include "nlinv/nlinv_model.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace radstream {

int nlinv_grid_size(int matrix, double grid_os) {
  const int g = int(std::ceil(grid_os * matrix - 1e-9));
  return (g + 3) / 4 * 4;
}

NlinvModel::NlinvModel(int matrix, int grid, int coils)
    : n_(matrix), g_(grid), j_(coils), px_(std::size_t(grid) * std::size_t(grid)), lo_((grid - matrix) / 2) {
  if (matrix < 2 || matrix % 2)
    throw ConfigError(fmt::format("nlinv: the image matrix {} must be even and >= 2", matrix));
  if (grid < matrix || grid % 4)
    throw ConfigError(
        fmt::format("nlinv: the grid {} must be a multiple of 4 and >= the matrix {}", grid, matrix));
  if (coils < 1) throw ConfigError(fmt::format("nlinv: {} coils; at least one is needed", coils));
}

NlinvModel::~NlinvModel() = default;

LinearOperator& NlinvModel::derivative() {
  if (!jacobian_) jacobian_ = std::make_unique<NlinvJacobian>(*this);
  return *jacobian_;
}

void nlinv_sobolev_weight(int g, const NlinvParams& p, float* w) {
  for (int y = 0; y < g; ++y)
    for (int x = 0; x < g; ++x) {
      // frequency index of the unshifted DFT layout, centred: [-G/2, G/2) over G
      const double ky = double(y < g / 2 ? y : y - g) / g;
      const double kx = double(x < g / 2 ? x : x - g) / g;
      w[std::size_t(y) * g + x] = float(std::pow(1.0 + p.sobolev_a * (kx * kx + ky * ky), -p.sobolev_l / 2));
    }
}

NlinvJacobian::NlinvJacobian(NlinvModel& model)
    : LinearOperator(Extents{model.unknowns()}, Extents{model.data_size()}, model.location()),
      model_(model) {}

}  // namespace radstream
