#include "linalg/adjoint_check.hpp"

#include <algorithm>
#include <random>

namespace radstream {

namespace {

void fill_random(HostBuffer<cfloat>& v, std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, 1.f);
  for (auto& c : v) c = cfloat(d(rng), d(rng));
}

// <a, b> = sum conj(a_i) b_i in double.
std::complex<double> inner(const HostBuffer<cfloat>& a, const HostBuffer<cfloat>& b) {
  std::complex<double> s = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    s += std::conj(std::complex<double>(a[i])) * std::complex<double>(b[i]);
  return s;
}

}  // namespace

AdjointCheck check_adjoint(LinearOperator& op, unsigned seed) {
  std::mt19937 rng(seed);
  const std::size_t nd = op.domain().size(), nc = op.codomain().size();
  HostBuffer<cfloat> x(Extents{nd}), y(Extents{nc}), ax(Extents{nc}), ahy(Extents{nd});
  fill_random(x, rng);
  fill_random(y, rng);
  if (op.location() == Location::Device) {
    Vector dx(nd, Location::Device), dy(nc, Location::Device), dax(nc, Location::Device),
        dahy(nd, Location::Device);
    gpu::StreamRef s = op.stream();
    gpu::copy_to_device(dx.data(), x.data(), nd * sizeof(cfloat), s);
    gpu::copy_to_device(dy.data(), y.data(), nc * sizeof(cfloat), s);
    op.forward(dx.data(), dax.data());
    op.adjoint(dy.data(), dahy.data());
    gpu::copy_to_host(ax.data(), dax.data(), nc * sizeof(cfloat), s);
    gpu::copy_to_host(ahy.data(), dahy.data(), nd * sizeof(cfloat), s);
    gpu::synchronize(s);
  } else {
    op.forward(x.data(), ax.data());
    op.adjoint(y.data(), ahy.data());
  }
  AdjointCheck c;
  c.lhs = inner(ax, y);
  c.rhs = inner(x, ahy);
  const double scale = std::max({std::abs(c.lhs), std::abs(c.rhs), 1e-300});
  c.relative_error = std::abs(c.lhs - c.rhs) / scale;
  return c;
}

}  // namespace radstream
