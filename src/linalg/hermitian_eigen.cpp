#include "linalg/hermitian_eigen.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"

namespace radstream {

HermitianEigen hermitian_eigen(std::vector<std::complex<double>> a, int n) {
  using C = std::complex<double>;
  if (n < 1 || a.size() != std::size_t(n) * std::size_t(n))
    throw InputError("hermitian_eigen: " + std::to_string(a.size()) + " values for a " + std::to_string(n) +
                     " x " + std::to_string(n) + " matrix");
  for (const C& v : a)
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
      throw InputError("hermitian_eigen: the matrix holds a value that is not finite");
  auto at = [&](int r, int c) -> C& { return a[std::size_t(r) * n + c]; };
  std::vector<C> v(std::size_t(n) * n, C{});
  for (int i = 0; i < n; ++i) v[std::size_t(i) * n + i] = 1.0;
  double total = 0;
  for (const C& x : a) total += std::norm(x);
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) off += 2 * std::norm(at(p, q));
    if (off <= 1e-28 * total || off == 0) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double r = std::abs(at(p, q));
        if (r == 0) continue;
        const C ph = at(p, q) / r;  // e^{i phi}
        const double zeta = (at(q, q).real() - at(p, p).real()) / (2 * r);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = t * c;
        // G = diag(1, e^{-i phi}) [[c, s], [-s, c]]: A <- G^H A G, V <- V G.
        const C gqp = -s * std::conj(ph), gqq = c * std::conj(ph);
        for (int k = 0; k < n; ++k) {  // columns p, q
          const C ap = at(k, p), aq = at(k, q);
          at(k, p) = c * ap + gqp * aq;
          at(k, q) = s * ap + gqq * aq;
          C& vp = v[std::size_t(k) * n + p];
          C& vq = v[std::size_t(k) * n + q];
          const C v0 = vp, v1 = vq;
          vp = c * v0 + gqp * v1;
          vq = s * v0 + gqq * v1;
        }
        for (int k = 0; k < n; ++k) {  // rows p, q
          const C ap = at(p, k), aq = at(q, k);
          at(p, k) = c * ap + std::conj(gqp) * aq;
          at(q, k) = s * ap + std::conj(gqq) * aq;
        }
        at(p, q) = at(q, p) = 0;
      }
  }
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return at(x, x).real() > at(y, y).real(); });
  HermitianEigen e;
  e.values.resize(std::size_t(n));
  e.vectors.resize(std::size_t(n) * n);
  for (int k = 0; k < n; ++k) {
    e.values[std::size_t(k)] = at(order[std::size_t(k)], order[std::size_t(k)]).real();
    for (int r = 0; r < n; ++r)
      e.vectors[std::size_t(r) * n + k] = v[std::size_t(r) * n + order[std::size_t(k)]];
  }
  return e;
}

}  // namespace radstream
