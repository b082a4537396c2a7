#include "core/exact_model.hpp"

#include <cmath>

#include "core/error.hpp"

namespace radstream {

ExactGrid ExactGrid::image(int matrix, int dims) {
  if (matrix < 1) throw ConfigError("exact model: matrix " + std::to_string(matrix) + " must be >= 1");
  if (dims != 2 && dims != 3)
    throw ConfigError("exact model: dims " + std::to_string(dims) + " must be 2 or 3");
  ExactGrid g;
  g.n = {dims == 3 ? matrix : 1, matrix, matrix};
  for (int a = 0; a < 3; ++a) g.origin[a] = g.n[a] > 1 ? -double(g.n[a] / 2) : 0.0;
  return g;
}

ExactGrid ExactGrid::q_grid() const {
  ExactGrid q;
  for (int a = 0; a < 3; ++a) {
    q.n[a] = n[a] > 1 ? 2 * n[a] : 1;
    q.origin[a] = n[a] > 1 ? -double(n[a]) : 0.0;
  }
  return q;
}

std::size_t ExactModel::samples() const {
  for (const auto& a : k)
    if (!a.empty()) return a.size();
  return 0;
}

namespace {

void check_array(const std::vector<float>& v, std::size_t n, const char* name, bool optional) {
  if (v.empty() && optional) return;
  if (v.size() != n)
    throw InputError(std::string("exact model: ") + name + " has " + std::to_string(v.size()) + " values, " +
                     std::to_string(n) + " expected");
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw InputError(std::string("exact model: ") + name + "[" + std::to_string(i) +
                       "] = " + std::to_string(v[i]) + " is not finite");
}

}  // namespace

void ExactModel::validate() const {
  const std::size_t M = samples(), V = voxels();
  if (M == 0) throw InputError("exact model: no samples (every trajectory axis is empty)");
  for (int a = 0; a < 3; ++a) {
    if (grid.n[a] < 1)
      throw InputError("exact model: grid axis " + std::to_string(a) + " has " + std::to_string(grid.n[a]) +
                       " voxels");
    check_array(k[a], M, a == 0 ? "k[0]" : a == 1 ? "k[1]" : "k[2]", true);
  }
  check_array(fm, V, "fm (field map)", true);
  for (int a = 0; a < 3; ++a) check_array(g[a], V, a == 0 ? "g[0]" : a == 1 ? "g[1]" : "g[2]", true);
  if (has_field() && t.empty())
    throw InputError("exact model: a field map or gradients need the time of every sample (t)");
  check_array(t, M, "t (sample times)", true);
}

ExactModel ExactModel::filled() const {
  validate();
  ExactModel f = *this;
  const std::size_t M = samples(), V = voxels();
  for (auto& a : f.k)
    if (a.empty()) a.assign(M, 0.0f);
  if (has_field()) {
    if (f.fm.empty()) f.fm.assign(V, 0.0f);
    if (has_gradients())
      for (auto& a : f.g)
        if (a.empty()) a.assign(V, 0.0f);
  } else {
    f.t.clear();
  }
  return f;
}

}  // namespace radstream
