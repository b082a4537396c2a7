// radstream bench: the cases of a folder (config/bench/*.yaml) run and reported as JSON, with a PASS/FAIL
// table on stderr.
#pragma once
#include <string>
#include <vector>

namespace radstream::app {

struct BenchRun {
  std::string backend;
  std::vector<std::string> cases;
  std::string cases_dir = "config/bench";
  int frames = 50, warmup = 5;
  std::string out;
  std::string plot;      // a result JSON to plot instead of running cases
  std::string baseline;  // a result JSON (or "auto") to compare the timings with
  double tolerance = 0.05;

  template <class V>
  void visit(V& v) {
    v.field("case", cases, "case names (R1 R2 R2-head R4 R7-...); none: all");
    v.field("cases_dir", cases_dir, "folder of case files, one .yaml each");
    v.field("frames", frames, 1, 100000, "timed frames per case");
    v.field("warmup", warmup, 0, 100000, "untimed frames first");
    v.field("out", out, "JSON file (empty: stdout)");
    v.field(
        "plot", plot,
        "draw the scaling cases (R7) and NUFFT sweeps of this result JSON as PNG plots beside it, instead of "
        "running cases");
    v.field("baseline", baseline,
            "compare the timings with this earlier result JSON of the same GPU kind and name those slower by "
            "more than --tolerance; auto: the newest matching file of tests/bench/results");
    v.field("tolerance", tolerance, 0.0, 10.0, "--baseline: the relative slow-down reported (0.05 = 5 %)");
    v.field("backend", backend,
            "cpu: run the GPU chain cases on the CPU instead of skipping them (empty: the GPU)");
  }
};

// Runs the chosen cases (all when none are named) and writes the JSON. Returns the exit status: 0 when
// every target passed, 1 when one failed. Throws ConfigError for an unknown case or a bad folder.
int run_bench(const BenchRun& run);

// The default case folder, config/bench, as found from here: in the working directory, else beside the
// program (build/radstream -> config/bench of its source tree; an installed bin/radstream ->
// share/radstream). Any other folder is returned as given.
std::string find_cases_dir(const std::string& dir);

}  // namespace radstream::app
