#include "linalg/linear_operator.hpp"

#include "core/error.hpp"

namespace radstream {

Vector::Vector(std::size_t n, Location loc) : n_(n), loc_(loc == Location::Device ? loc : Location::Host) {
  if (loc_ == Location::Device) {
    d_ = DeviceBuffer<cfloat>(Extents{n});
    if (n) {
      gpu::memset_device(d_.data(), 0, n * sizeof(cfloat), nullptr);
      gpu::synchronize(nullptr);  // made before any stream uses it
    }
  } else {
    h_ = HostBuffer<cfloat>(Extents{n});
  }
}

LinearOperator::LinearOperator(Extents domain, Extents codomain, Location loc)
    : domain_(domain), codomain_(codomain), loc_(loc), work_(codomain.size(), loc) {}

void LinearOperator::normal(const cfloat* x, cfloat* z) {
  forward(x, work_.data());
  adjoint(work_.data(), z);
}

ChainOperator::ChainOperator(std::shared_ptr<LinearOperator> first, std::shared_ptr<LinearOperator> second)
    : LinearOperator(first->domain(), second->codomain(), first->location()),
      first_(std::move(first)),
      second_(std::move(second)),
      mid_(first_->codomain().size(), first_->location()) {
  if (!(first_->codomain().size() == second_->domain().size()))
    throw ConfigError("chain: the first operator's codomain " + first_->codomain().str() +
                      " does not match the second's domain " + second_->domain().str());
  if (first_->location() != second_->location())
    throw ConfigError("chain: the two operators live at different locations");
}

void ChainOperator::forward(const cfloat* x, cfloat* y) {
  first_->forward(x, mid_.data());
  second_->forward(mid_.data(), y);
}

void ChainOperator::adjoint(const cfloat* y, cfloat* x) {
  second_->adjoint(y, mid_.data());
  first_->adjoint(mid_.data(), x);
}

}  // namespace radstream
