// The CG-SENSE cases' extras (R8, R10): the coil maps a chain case is given, the cost of one Toeplitz
// normal-operator application against its floor (a batched forward and inverse cuFFT of the 2x-padded coil
// grids, timed in the same run), and BART's `pics` on the same input.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/buffer.hpp"
#include "core/frame.hpp"
#include "recon/recon_params.hpp"
#include "sim/simulator.hpp"

namespace radstream::app {

// The frame as BART's pair in `dir`: t [3 samples spokes] (BART units), k [1 samples spokes coils].
void write_bart_pair(const std::string& dir, const Frame& f);

// The case's frame: the simulator's first `spokes` spokes at the case's matrix, samples and coils (SNR 50).
Frame bench_frame(int matrix, int samples, int coils, int spokes);
// The simulator settings behind bench_frame (a moving case takes its later spokes from the same simulator).
SimParams bench_simulation(int matrix, int samples, int coils);

// Maps for a chain case that reads them: estimated once from the case's frame (not timed: "maps given").
HostBuffer<cfloat> bench_maps(const Frame& f);

// CUDA: median/p99 ms of SenseOperatorCuda::normal() (Toeplitz) and of the floor, and their ratio.
nlohmann::ordered_json normal_operator_floor(const Frame& f, const HostBuffer<cfloat>& maps,
                                             const ReconParams& p, int frames, int warmup);

// `bart pics -S -l2 -r lambda -i iterations` on the frame and maps (median of 3 runs, ms, the command's wall
// time); null when BART is not installed.
nlohmann::ordered_json bart_pics_reference(const Frame& f, const HostBuffer<cfloat>& maps, int iterations,
                                           double lambda);

}  // namespace radstream::app
