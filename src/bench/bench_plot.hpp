// `radstream bench --plot FILE.json`: the scaling cases of a benchmark result (R7-coils-*, R7-spokes-*,
// R7-matrix-*, R7-fbp-spokes-*, with R1 as the common point of the gridding series) drawn as log-log PNG
// plots of the median frame time against the parameter, with the line that grows like the work through the
// middle point, so "cost grows no faster than the work" can be seen at a glance; and each nufft-sweep case
// as a log-log plot of time per transform against relative error (FILE-<case>.png). Written beside the JSON.
#pragma once
#include <string>
#include <vector>

namespace radstream::app {

// Returns the PNG files written (FILE-scaling-coils.png, ..., FILE-nufft-sweep.png). Throws ConfigError when
// the JSON has neither a scaling case nor a sweep, IoError when it cannot be read or a PNG cannot be written.
std::vector<std::string> plot_bench_scaling(const std::string& json_path, const std::string& out_dir = "");

}  // namespace radstream::app
