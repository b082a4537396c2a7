// A benchmark case's target (DESIGN.md section 10) as data: clauses "JSON-pointer <= number" or
// "JSON-pointer >= number" joined by ';', evaluated against the case's own result, e.g.
//   target: "/frame_ms/median <= 3; /frame_ms/p99 <= 4"          (R8)
//   target: "/solver_deadline_misses <= 0; /latency_arrival_to_ready_ms/p99 <= 6"   (R9)
// The result says each clause's value and whether it holds; a metric the case did not measure fails.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace radstream::app {

// Throws ConfigError naming the clause when `spec` does not parse (checked when the case file is read).
void check_target_spec(const std::string& spec, const std::string& case_name);

// {"spec": ..., "checks": [{"metric", "op", "limit", "value", "pass"}], "pass": bool}.
nlohmann::ordered_json evaluate_target(const std::string& spec, const nlohmann::ordered_json& result);

}  // namespace radstream::app
