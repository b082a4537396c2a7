// Seed 001's multi-GPU reconstruction of a stack of slices: every slice is an independent problem (its own
// model and data), so slices go to GPUs with no communication between them. One host thread per GPU takes the
// next slice from a shared counter (the "dynamic queue" the seed proposes instead of its static assignment,
// so a faster GPU takes more slices). On the host (options.gpu false) the slices run one after the other,
// each using every core. A failing slice stops the others and its error is rethrown with the slice's index.
#pragma once
#include <vector>

#include "exact/exact_recon.hpp"

namespace radstream {

struct ExactSlice {
  const ExactModel* model = nullptr;
  const std::vector<cfloat>* kdata = nullptr;  // coils blocks of the model's samples
};

struct ExactSlicesResult {
  std::vector<ExactReconResult> slices;
  std::vector<int> device_of;  // the GPU each slice ran on (-1: host)
  double wall_ms = 0;
};

// gpus: how many devices to use (0: all there are). Throws ConfigError for more GPUs than the machine has.
ExactSlicesResult exact_reconstruct_slices(const std::vector<ExactSlice>& slices, int coils,
                                           const ExactReconOptions& options, int gpus = 0);
// The same on these devices (core/gpu_list.hpp; empty: all there are). Throws ConfigError for a GPU the
// machine does not have.
ExactSlicesResult exact_reconstruct_slices(const std::vector<ExactSlice>& slices, int coils,
                                           const ExactReconOptions& options, const std::vector<int>& devices);

}  // namespace radstream
