// Image comparisons used by the tests and the command line: percentiles, scalar least-squares fit, NRMSE.
#pragma once
#include <span>

namespace radstream {

// The q-th percentile (0..100) of the finite values.
float percentile(std::span<const float> v, double q);

// Relative l2 error ||a - b|| / ||b|| (b is the reference).
double relative_error(std::span<const float> a, std::span<const float> b);

// NRMSE of a after the scalar fit s = <a, b> / <a, a> that best matches the reference b: ||s a - b|| / ||b||.
double nrmse_scaled(std::span<const float> a, std::span<const float> b);

}  // namespace radstream
