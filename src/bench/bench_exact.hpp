// Shared by bench-exact's files: its options, the timing summary, and the cases kept in bench_exact_cases.cpp.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace radstream::app {

struct BenchExactArgs {
  std::vector<std::string> cases{"S1", "S2", "S3", "S4", "P"};
  std::string impatient = "../shared/data/impatient/64x64x1", out, backend = "auto";
  int repeat = 5, n = 128, spokes = 2156, samples = 132, iterations = 60;
  double lambda = 1e-2, noise = 0.01, s4_sigma = 2.0, anatomical_lambda = 10.0;
};

double median(std::vector<double> v);
// {"median_ms", "min_ms", "max_ms", "runs"}
nlohmann::ordered_json stats(const std::vector<double>& v);

nlohmann::ordered_json bench_s4(const BenchExactArgs& a, bool gpu);
nlohmann::ordered_json bench_slices(const BenchExactArgs& a, bool gpu);

}  // namespace radstream::app
