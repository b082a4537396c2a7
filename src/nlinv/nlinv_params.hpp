// NLINV's settings (Uecker et al. 2008/2010, BART's rtnlinv): the Newton steps of the IRGNM and their
// regularization schedule, the oversampled grid the model lives on, the Sobolev weight on the coils and the
// temporal damping toward the previous frame. Declared once; the CLI flags, the YAML keys under `recon:` and
// `radstream config-keys` all come from visit().
#pragma once
#include <string>

#include "core/enum_table.hpp"

namespace radstream {

// rho * ||c|| (BART's default, the coil-normalized image) or rho alone (BART's rtnlinv -N).
enum class NlinvOutput { Combined, Rho };
inline constexpr EnumTable<NlinvOutput, 2> kNlinvOutputs{
    "NLINV output", {{{NlinvOutput::Combined, "combined"}, {NlinvOutput::Rho, "rho"}}}};

// When a Newton step's CG stops: BART's rtnlinv rule ||r|| <= (0.1 ||b||)^2 (scale-dependent), or the
// relative
// ||r|| <= 0.1 ||b|| (BART's outside nlinv; the same on any grid and data scale).
enum class NlinvCgRule { Legacy, Relative };
inline constexpr EnumTable<NlinvCgRule, 2> kNlinvCgRules{
    "NLINV CG rule", {{{NlinvCgRule::Legacy, "legacy"}, {NlinvCgRule::Relative, "relative"}}}};

struct NlinvParams {
  int newton = 8;                 // Newton steps per frame (BART: -i, default 8)
  double grid_os = 2.0;           // grid oversampling of the model (BART: 2)
  double sobolev_a = 220.0;       // W = (1 + a |k|^2)^(l/2) (BART: a = 220)
  double sobolev_l = 32.0;        // (BART: b = 32)
  double temporal_damping = 0.9;  // x_ref = damping x the previous frame's solution (BART: -T 0.9)
  double alpha_min = 0.0;         // alpha_n -> (alpha_n - alpha_min) / redu + alpha_min
  double alpha_reduction = 2.0;   // redu
  int newton_cg_max = 100;        // CG iterations per Newton step at most (BART: 100)
  int virtual_coils = 0;          // coil compression (PCA of the stream's first frame); 0 = off
  double deadline_ms = 0;         // 0: every Newton step; > 0: the frame's budget (stops early, best iterate)
  NlinvOutput output = NlinvOutput::Combined;
  NlinvCgRule cg_rule = NlinvCgRule::Legacy;
  // GPU: the frame as one graph whose CGs stop themselves on the device (iter/irgnm.hpp).
  bool device_loops = true;
  // GPU: the model's work (the normal operator, the linearization, the gradient) on the custom FFT engine
  // where it takes the grid (a power of two of 64..2048), else through cuFFT; not a key: the tests turn it
  // off to compare the two.
  bool fused = true;

  template <class V>
  void visit(V& v) {
    v.field("newton", newton, 1, 100, "nlinv: Newton steps per frame (IRGNM; BART's default 8)");
    v.field("grid_os", grid_os, 1.5, 2.0,
            "nlinv: oversampling of the Cartesian grid the model is fitted on (2 as BART; 1.5 is faster, its "
            "Toeplitz kernel wraps)");
    v.field("sobolev_a", sobolev_a, 1e-3, 1e6, "nlinv: a of the coils' Sobolev weight (1 + a |k|^2)^(l/2)");
    v.field("sobolev_l", sobolev_l, 0.0, 256.0, "nlinv: l of the coils' Sobolev weight (1 + a |k|^2)^(l/2)");
    v.field("temporal_damping", temporal_damping, 0.0, 1.0,
            "nlinv: each frame is regularized toward this times the previous frame's solution (0 = none)");
    v.field("alpha_min", alpha_min, 0.0, 1.0, "nlinv: the floor of the regularization alpha (starts at 1)");
    v.field("alpha_reduction", alpha_reduction, 1.0, 100.0,
            "nlinv: alpha is divided by this at each Newton step (BART's redu, 2)");
    v.field("newton_cg_max", newton_cg_max, 1, 10000,
            "nlinv: CG iterations per Newton step at most (stops earlier by BART's rule)");
    v.field("virtual_coils", virtual_coils, 0, 64,
            "nlinv: compress the coils to this many virtual coils, the principal components of the stream's "
            "first frame as bart cc -p computes them, kept for the stream (0 = off)");
    v.field(
        "nlinv_deadline_ms", deadline_ms, 0.0, 1e4,
        "nlinv: each frame's budget: stop when the next CG iteration or Newton step would pass it, with the "
        "best iterate reached (0 = every Newton step)");
    v.field(
        "nlinv_device_loops", device_loops,
        "nlinv: on a GPU, run each frame as one graph whose CGs stop themselves on the device, the deadline "
        "checked there too (false: the host reads every CG's residual and steps it; the same images, "
        "slower)");
    v.choice("nlinv_cg_rule", cg_rule, kNlinvCgRules,
             "nlinv: when a Newton step's CG stops: legacy = ||r|| <= (0.1 ||b||)^2 as BART's rtnlinv (its "
             "iteration count depends on the data's scale and the grid); relative = ||r|| <= 0.1 ||b||");
    v.choice("nlinv_output", output, kNlinvOutputs,
             "nlinv: combined = rho times the coils' root-sum-of-squares (BART's default); rho = rho alone");
  }
};

}  // namespace radstream
