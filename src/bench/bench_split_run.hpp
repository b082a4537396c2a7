// radstream bench-split (M3): the coil split of one CG-SENSE frame over 1, 2, 4 ... GPUs or host partitions,
// timed per configuration (bench_split_run.cpp says how).
#pragma once
#include <string>
#include <vector>

namespace radstream::app {

struct SplitOptions {
  std::string case_file = "config/bench/R8.yaml";
  std::string backend = "cuda";
  std::vector<std::string> parts{"1", "2"}, gpus;
  int frames = 30, warmup = 3;
  std::string out;

  template <class V>
  void visit(V& v) {
    v.field("case", case_file, "bench case file");
    v.field("backend", backend, "cuda (one GPU per partition, NCCL) or cpu (host threads)");
    v.field("parts", parts, "partition counts to time, the first is the reference");
    v.field("gpus", gpus,
            "GPUs to use, in order (none: 0 1 ...); a GPU listed twice holds two partitions, their sums "
            "through host "
            "memory");
    v.field("frames", frames, 1, 100000, "timed solves per configuration");
    v.field("warmup", warmup, 0, 100000, "untimed solves first");
    v.field("out", out, "write the JSON here (empty: print it)");
  }
};

// Runs every partition count and writes the JSON (--out, else stdout). Throws ConfigError naming a bad
// option.
int run_bench_split(const SplitOptions& options);

}  // namespace radstream::app
