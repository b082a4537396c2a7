// The bench's regression guard: a result compared, case by case and timing by timing, with a baseline result
// from the same device kind (a committed tests/bench/results/*.json), naming every timing that got slower
// by more than the tolerance. Timings are medians (p99 for the latency cases); throughputs compare as their
// inverse. A baseline from another GPU (or the CPU) is not compared: the report says so.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace radstream::app {

// The lower-is-better numbers of one case of a result, by name ("frame_ms", "forward_ms", a sweep row's
// "random 1000000 -> 512^2 forward W6 sigma 2", "1/acquisitions_per_s", ...).
std::map<std::string, double> case_timings(const nlohmann::json& c);

// "auto": of the results in results_dir whose "gpu" is `gpu`, the one holding the most of `cases`, the newest
// (by its "date", then its name) among equals; empty when none holds any. Files named "...dropped..." (a
// tried-and-dropped variant's numbers) are never the baseline. Any other value is returned as
// given.
std::string find_baseline(const std::string& spec, const std::string& results_dir, const std::string& gpu,
                          const std::vector<std::string>& cases);

// {"file", "baseline_gpu", "compared", "tolerance", "slower": [{case, timing, baseline, now, ratio}],
// "faster": [...]} or, across device kinds, {"file", "not_compared": why}. Throws IoError for an unreadable
// file.
nlohmann::ordered_json compare_with_baseline(const nlohmann::ordered_json& now, const std::string& file,
                                             double tolerance = 0.05);

}  // namespace radstream::app
