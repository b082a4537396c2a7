// NLINV's forward model, formulated as BART's rtnlinv (Uecker et al. 2008, 2010), behind one interface for
// both backends (NlinvModelCpu, NlinvModelCuda). On a Cartesian grid of G x G cells (G = grid_os x N: the
// image's FOV enlarged with the same pixel size) the unknowns are x = (rho, chat_1..chat_J): the image rho
// [G*G] and each coil's k-space coefficients chat_j [G*G], the coil image c_j = U^H (w . chat_j) with
// w = (1 + a |k|^2)^(-l/2) the Sobolev weight (k per axis the frequency index over G, in [-1/2, 1/2)) and U
// the unitary 2D DFT. The model of the frame's gridded k-space is
//   F(x)_j = D . G(x)_j,   G(x)_j = U (M rho c_j),
// M the mask of the central N x N pixels, D the frame's Toeplitz transfer function (the DFT of its point
// spread function A^H A delta on the grid). With the data y_j = U (A^H s_j) (A the NUFFT of the frame's
// spokes, s its samples) a Gauss-Newton step on ||y - F(x)|| in BART's form,
//   (DG^H D DG + alpha I) dx = DG^H (y - F(x)) + alpha (x_ref - x),
// is exactly one on the raw samples, ||s - A M rho c||^2: DG^H D DG = (A DG')^H (A DG') and DG^H y =
// (A DG')^H s, DG' the Jacobian of M rho c. So every application is FFTs and pointwise products.
// Arrays are [coil][G][G], x fastest, the image's centre at cell G/2 (as the NUFFT operators'); every pointer
// is at location().
#pragma once
#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"
#include "iter/nonlinear_operator.hpp"
#include "linalg/linear_operator.hpp"
#include "nlinv/nlinv_params.hpp"

namespace radstream {

// The grid of the model for an image matrix N at oversampling os: the smallest multiple of 4 >= os N (a
// multiple of 4 keeps every coil's array 64-byte aligned in the unknowns' vector).
int nlinv_grid_size(int matrix, double grid_os);

class NlinvJacobian;

// As a NonlinearOperator: F = G, the weighting W = D, the data y; domain x, codomain [J][G*G].
class NlinvModel : public NonlinearOperator {
 public:
  NlinvModel(int matrix, int grid, int coils);
  ~NlinvModel() override;
  NlinvModel(const NlinvModel&) = delete;
  NlinvModel& operator=(const NlinvModel&) = delete;

  std::size_t domain_size() const override { return unknowns(); }
  std::size_t codomain_size() const override { return data_size(); }
  // DG at the point of linearization (made on the first call: the solver needs only normal()).
  LinearOperator& derivative() override;
  int matrix() const { return n_; }
  int grid() const { return g_; }
  int coils() const { return j_; }
  std::size_t pixels() const { return px_; }               // G*G
  std::size_t unknowns() const { return px_ * (1 + j_); }  // rho then the J coils
  std::size_t data_size() const { return px_ * j_; }

  // The frame's transfer function D [G*G] (written by the caller before linearize()).
  virtual cfloat* pattern() = 0;
  // Sets the point of linearization x [unknowns()]: keeps rho and computes the coil images c_j.
  void linearize(const cfloat* x) override = 0;
  // out [J][G*G] = F(x) at the point of linearization.
  virtual void value(cfloat* out) = 0;
  // The Newton step's gradient at the point of linearization: r [J][G*G] = y - F(x) and b [unknowns()] =
  // DG^H r (y: the frame's data).
  void gradient(const cfloat* y, cfloat* r, cfloat* b) override = 0;
  // out [J][G*G] = DG v (the Jacobian of G, without D).
  virtual void derivative(const cfloat* v, cfloat* out) = 0;
  // out [unknowns()] = DG^H r.
  virtual void derivative_adjoint(const cfloat* r, cfloat* out) = 0;
  // out = DG^H D DG v (through an internal data-sized workspace).
  void normal(const cfloat* v, cfloat* out) override = 0;
  // The output [N*N], the centre of the grid: rho * sqrt(sum_j |c_j|^2) (combined) or rho.
  virtual void image(NlinvOutput output, cfloat* out) = 0;
  // In place: U (or U^H) of `batch` (1 or J) arrays of G x G.
  virtual void unitary(cfloat* data, int batch, bool inverse) = 0;
  // out [J][N][N] (at location()): the coil images c_j of the point of linearization, the grid's centre.
  virtual void coil_maps(cfloat* out) = 0;

 protected:
  int n_, g_, j_;
  std::size_t px_;
  int lo_;  // first cell of the mask per axis

 private:
  std::unique_ptr<NlinvJacobian> jacobian_;
};

// The Sobolev weight w [G*G] in the unshifted DFT layout (host), shared by both backends.
void nlinv_sobolev_weight(int grid, const NlinvParams& p, float* w);

// The Jacobian DG as a linear operator ((1 + J) G^2 -> J G^2) at the model's current point, for the adjoint
// test and the finite-difference test.
class NlinvJacobian final : public LinearOperator {
 public:
  explicit NlinvJacobian(NlinvModel& model);
  gpu::StreamRef stream() const override { return model_.stream(); }
  void forward(const cfloat* x, cfloat* y) override { model_.derivative(x, y); }
  void adjoint(const cfloat* y, cfloat* x) override { model_.derivative_adjoint(y, x); }

 private:
  NlinvModel& model_;
};

}  // namespace radstream
