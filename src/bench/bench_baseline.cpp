#include "bench/bench_baseline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace radstream::app {
namespace {

nlohmann::json read_result(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw IoError(file + ": cannot read the baseline result");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw IoError(file + ": not a benchmark result (" + e.what() + ")");
  }
}

// The number at a JSON pointer, when it is one.
bool number_at(const nlohmann::json& j, const char* pointer, double& out) {
  const nlohmann::json::json_pointer p(pointer);
  if (!j.contains(p) || !j.at(p).is_number()) return false;
  out = j.at(p).get<double>();
  return true;
}

}  // namespace

std::map<std::string, double> case_timings(const nlohmann::json& c) {
  std::map<std::string, double> t;
  static const std::pair<const char*, const char*> kTimes[] = {
      {"frame_ms", "/frame_ms/median"},
      {"forward_ms", "/forward_ms/median"},
      {"adjoint_ms", "/adjoint_ms/median"},
      {"set_points_ms", "/set_points_ms/median"},
      {"latency_arrival_to_ready_ms p99", "/latency_arrival_to_ready_ms/p99"},
      {"latency_arrival_to_sent_ms p99", "/latency_arrival_to_sent_ms/p99"},
      {"inverse_ms custom", "/inverse_ms/custom/median"},
      {"tail_ms custom_fused", "/tail_ms/custom_fused/median"},
      {"normal_operator normal_ms", "/normal_operator/normal_ms/median"}};
  static const std::pair<const char*, const char*> kRates[] = {
      {"1/acquisitions_per_s", "/acquisitions_per_s"}, {"1/spokes_per_s", "/spokes_per_s"}};
  double v = 0;
  for (const auto& [name, ptr] : kTimes)
    if (number_at(c, ptr, v) && v > 0) t[name] = v;
  for (const auto& [name, ptr] : kRates)
    if (number_at(c, ptr, v) && v > 0) t[name] = 1.0 / v;
  if (c.contains("rows") && c["rows"].is_array())
    for (const auto& r : c["rows"]) {
      if (!r.contains("ms") || !r["ms"].is_number()) continue;
      t[fmt::format("{} {} W{} sigma {:g}", r.value("geometry", ""), r.value("direction", ""),
                    r.value("width", 0), r.value("sigma", 0.0))] = r["ms"].get<double>();
    }
  return t;
}

std::string find_baseline(const std::string& spec, const std::string& results_dir, const std::string& gpu,
                          const std::vector<std::string>& cases) {
  if (spec != "auto") return spec;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(results_dir, ec)) return "";
  std::string best, best_key;
  for (const auto& e : fs::directory_iterator(results_dir, ec)) {
    if (e.path().extension() != ".json") continue;
    // An experiment recorded and not kept ("...-dropped.json") measured code that main does not have.
    if (e.path().filename().string().find("dropped") != std::string::npos) continue;
    nlohmann::json j;
    try {
      j = read_result(e.path().string());
    } catch (const IoError&) {
      continue;  // not every file there is a bench result
    }
    if (!j.is_object() || j.value("gpu", std::string()) != gpu || !j.contains("cases")) continue;
    int holds = 0;
    for (const auto& c : j["cases"])
      if (c.is_object() &&
          std::find(cases.begin(), cases.end(), c.value("case", std::string())) != cases.end())
        ++holds;
    if (!holds) continue;
    // The file with the most of these cases, then the newest.
    const std::string key =
        fmt::format("{:06d} ", holds) + j.value("date", std::string()) + " " + e.path().filename().string();
    if (key > best_key) best_key = key, best = e.path().string();
  }
  return best;
}

nlohmann::ordered_json compare_with_baseline(const nlohmann::ordered_json& now, const std::string& file,
                                             double tolerance) {
  const nlohmann::json base = read_result(file);
  nlohmann::ordered_json out = {{"file", file}};
  const std::string gpu_now = now.value("gpu", std::string("none")),
                    gpu_base = base.value("gpu", std::string("none"));
  if (gpu_now != gpu_base) {
    out["not_compared"] = fmt::format(
        "the baseline ran on '{}', this run on '{}': timings compare only on the "
        "same device kind",
        gpu_base, gpu_now);
    return out;
  }
  out["baseline_gpu"] = gpu_base;
  out["baseline_date"] = base.value("date", std::string());
  out["baseline_commit"] = base.value("commit", std::string());
  out["tolerance"] = tolerance;
  nlohmann::ordered_json slower = nlohmann::ordered_json::array(), faster = nlohmann::ordered_json::array();
  int compared = 0;
  for (const auto& c : now.value("cases", nlohmann::ordered_json::array())) {
    const std::string name = c.value("case", std::string());
    const auto it = std::find_if(base["cases"].begin(), base["cases"].end(), [&](const nlohmann::json& b) {
      return b.value("case", std::string()) == name;
    });
    if (it == base["cases"].end() || it->value("backend", "") != c.value("backend", "")) continue;
    const auto tb = case_timings(*it), tn = case_timings(c);
    for (const auto& [key, v] : tn) {
      const auto b = tb.find(key);
      if (b == tb.end()) continue;
      ++compared;
      const double ratio = v / b->second;
      nlohmann::ordered_json row = {
          {"case", name}, {"timing", key}, {"baseline", b->second}, {"now", v}, {"ratio", ratio}};
      if (ratio > 1.0 + tolerance)
        slower.push_back(std::move(row));
      else if (ratio < 1.0 - tolerance)
        faster.push_back(std::move(row));
    }
  }
  out["compared"] = compared;
  out["slower"] = slower;
  out["faster"] = faster;
  return out;
}

}  // namespace radstream::app
