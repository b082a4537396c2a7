// Linear operators (BART's linop shape): an operator maps a domain vector to a codomain vector, both complex
// arrays of known extents living at one location (host or device); forward, adjoint and normal travel
// together so that solvers see only the operator. normal() defaults to adjoint after forward through a
// workspace made at construction (a Toeplitz operator overrides it). Device operators enqueue on their own
// stream and never synchronize; nothing is allocated after construction.
#pragma once
#include <memory>

#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"

namespace radstream {

// A complex vector at a location: the owning buffer of either kind behind one pointer.
class Vector {
 public:
  Vector() = default;
  Vector(std::size_t n, Location loc);
  cfloat* data() { return loc_ == Location::Device ? d_.data() : h_.data(); }
  const cfloat* data() const { return loc_ == Location::Device ? d_.data() : h_.data(); }
  std::size_t size() const { return n_; }
  Location location() const { return loc_; }

 private:
  std::size_t n_ = 0;
  Location loc_ = Location::Host;
  HostBuffer<cfloat> h_;
  DeviceBuffer<cfloat> d_;
};

class LinearOperator {
 public:
  LinearOperator(Extents domain, Extents codomain, Location loc);
  virtual ~LinearOperator() = default;
  LinearOperator(const LinearOperator&) = delete;
  LinearOperator& operator=(const LinearOperator&) = delete;

  const Extents& domain() const { return domain_; }
  const Extents& codomain() const { return codomain_; }
  Location location() const { return loc_; }
  // Device operators: the stream (cudaStream_t) their work is enqueued on; nullptr on the host.
  virtual gpu::StreamRef stream() const { return nullptr; }

  // y = A x (x: domain().size() values, y: codomain().size() values, both at location()).
  virtual void forward(const cfloat* x, cfloat* y) = 0;
  // x = A^H y.
  virtual void adjoint(const cfloat* y, cfloat* x) = 0;
  // z = A^H A x (x and z: domain). Default: forward into a workspace, then adjoint.
  virtual void normal(const cfloat* x, cfloat* z);

 private:
  Extents domain_, codomain_;
  Location loc_;
  Vector work_;  // codomain-sized, for the default normal()
};

// B after A: forward B(A x), adjoint A^H(B^H y), with A's codomain as the intermediate (a workspace).
class ChainOperator final : public LinearOperator {
 public:
  ChainOperator(std::shared_ptr<LinearOperator> first, std::shared_ptr<LinearOperator> second);
  gpu::StreamRef stream() const override { return first_->stream(); }
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;

 private:
  std::shared_ptr<LinearOperator> first_, second_;
  Vector mid_;
};

}  // namespace radstream
