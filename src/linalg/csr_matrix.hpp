// A sparse matrix in compressed sparse rows (seed 001 holds its regularizer C this way) and the operator it
// makes: forward y = C x, adjoint x = C^T y through a second CSR holding the transpose (seed 001: "switching
// rows and columns ... reduces the problem to just sparse matrix-vector multiplication"), and normal
// C^T C x through a third holding the product C^T C (one SpMV per CG iteration instead of two; for first
// differences it is the 5- or 7-point Laplacian). The values are real, the vectors complex. On the host
// (OpenMP over rows) or the device (cuSPARSE SpMV; CUDA builds only).
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "linalg/linear_operator.hpp"

namespace radstream {

struct CsrMatrix {
  int rows = 0, cols = 0;
  std::vector<int> row_ptr{0};  // rows + 1 offsets into col / val
  std::vector<int> col;
  std::vector<float> val;

  std::size_t nonzeros() const { return col.size(); }
  CsrMatrix transposed() const;
  // C^T C (cols x cols), its columns sorted within each row, each product summed in double.
  CsrMatrix gram() const;
  // Throws InputError when an offset, column or count is out of range (a matrix read from a file).
  void validate() const;
};

// First differences of a grid of three axes (slowest first): one row per voxel and axis with n > 1 whose
// neighbour along that axis exists, x(v + e_a) - x(v) (no wrap-around). C^T C is the Neumann Laplacian.
// With an anatomical prior (seed 000's anatomically constrained reconstruction): a difference between two
// voxels of different regions (labels, one per voxel; nullptr: one region) has no row, so edges that the
// anatomy knows about are not smoothed. Throws ConfigError when the labels do not cover the grid.
CsrMatrix finite_difference_csr(const std::array<int, 3>& n, const std::vector<int>* regions = nullptr);

class CsrOperatorCpu final : public LinearOperator {
 public:
  // domain: the caller's extents of the columns (e.g. the image), codomain [rows].
  CsrOperatorCpu(CsrMatrix c, Extents domain);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;
  void normal(const cfloat* x, cfloat* z) override;

 private:
  CsrMatrix c_, ct_, ctc_;
};

struct CusparseCsr;  // the device arrays, descriptors and SpMV buffers

class CsrOperatorCuda final : public LinearOperator {
 public:
  CsrOperatorCuda(const CsrMatrix& c, Extents domain, gpu::StreamRef stream);
  ~CsrOperatorCuda() override;
  gpu::StreamRef stream() const override { return stream_; }
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;
  void normal(const cfloat* d_x, cfloat* d_z) override;

 private:
  gpu::StreamRef stream_;
  CusparseCsr* c_ = nullptr;
  CusparseCsr* ct_ = nullptr;
  CusparseCsr* ctc_ = nullptr;
};

}  // namespace radstream
