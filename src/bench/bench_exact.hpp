// Shared by bench-exact's files: its options, the timing summary, and the cases kept in
// bench_exact_cases.cpp.
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

  template <class V>
  void visit(V& v) {
    v.field("case", cases,
            "S1 S2 S3 S4 P SL (SL: 16 slices over the GPUs; P: double / single / fast-trig PSNR)");
    v.field("impatient", impatient, "the seed 001 case's folder");
    v.field("out", out, "JSON file (empty: stdout)");
    v.field("backend", backend, "auto | cpu | cuda");
    v.field("repeat", repeat, 1, 100000, "timed runs per figure (one more untimed first on the GPU)");
    v.field("matrix", n, 8, 1024, "3D case: voxels per side");
    v.field("spokes", spokes, 1, 1 << 24, "3D case: radial spokes");
    v.field("samples", samples, 2, 1 << 16, "3D case: samples per spoke");
    v.field("iterations", iterations, 1, 100000, "S3: CG iterations");
    v.field("lambda", lambda, 0.0, 1e9, "S3: weight of ||C x||^2 relative to F^H F's diagonal M");
    v.field("anatomical_lambda", anatomical_lambda, 0.0, 1e9,
            "S3: lambda of the CG with the anatomical prior (differences across the phantom's boundaries "
            "left out of C)");
    v.field("noise", noise, 0.0, 1e3, "S3: noise RMS as a fraction of the data's RMS for the noisy run");
    v.field("s4_oversampling", s4_sigma, 1.0, 4.0, "S4: the NUFFT's grid oversampling (1.25 works with W 4)");
  }
};

double median(std::vector<double> v);
// {"median_ms", "min_ms", "max_ms", "runs"}
nlohmann::ordered_json stats(const std::vector<double>& v);

// Runs the chosen cases and writes the JSON (--out, else stdout). Throws ConfigError for an unknown case.
int run_bench_exact(const BenchExactArgs& a);

nlohmann::ordered_json bench_s4(const BenchExactArgs& a, bool gpu);
nlohmann::ordered_json bench_slices(const BenchExactArgs& a, bool gpu);

}  // namespace radstream::app
