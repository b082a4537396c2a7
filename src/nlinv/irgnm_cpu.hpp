// The iteratively regularized Gauss-Newton method of NLINV, as BART's iter4_irgnm runs it for nlinv: Newton
// steps n = 0..N-1, each solving
//   (DG^H D DG + alpha_n I) h = DG^H (y - F(x_n)) + alpha_n (x_ref - x_n),   x_{n+1} = x_n + h
// by conjugate gradients from h = 0 (at most newton_cg_max iterations, stopped by BART's legacy rule
// ||r|| <= (0.1 ||b||)^2, the original Matlab nlinv's), then alpha <- (alpha - alpha_min) / redu + alpha_min,
// alpha_0 = 1. Every vector is made at construction: a frame allocates nothing.
#pragma once
#include <cstddef>

#include "core/buffer.hpp"
#include "nlinv/nlinv_engine.hpp"
#include "nlinv/nlinv_model_cpu.hpp"

namespace radstream {

class IrgnmCpu {
 public:
  explicit IrgnmCpu(NlinvModelCpu& model);
  // x [unknowns] is updated in place; x_ref may be null (zero); y [data_size].
  IrgnmReport solve(const NlinvParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y);

 private:
  int cg(double alpha, int max_iter, cfloat* h, const cfloat* b);

  NlinvModelCpu& model_;
  HostBuffer<cfloat> r_data_, b_, h_, r_, p_, ap_;
};

}  // namespace radstream
