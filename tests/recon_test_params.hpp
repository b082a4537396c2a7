// Reconstruction settings the chain tests share: the CPU backend with FFTW's quick planner (a test's frames
// are too few to repay measured plans).
#pragma once
#include "recon/recon_params.hpp"

namespace radstream::test {

inline ReconParams cpu_params() {
  ReconParams p;
  p.backend = BackendChoice::Cpu;
  p.fft.planner = FftPlanner::Estimate;
  return p;
}

}  // namespace radstream::test
