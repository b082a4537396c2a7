#include "bench/bench_target.hpp"

#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace radstream::app {
namespace {

struct Clause {
  std::string metric, op;
  double limit = 0;
};

std::vector<Clause> parse(const std::string& spec, const std::string& case_name) {
  std::vector<Clause> out;
  std::stringstream all(spec);
  std::string part;
  while (std::getline(all, part, ';')) {
    if (part.find_first_not_of(" \t") == std::string::npos) continue;
    std::stringstream ps(part);
    Clause c;
    std::string limit, extra;
    ps >> c.metric >> c.op >> limit;
    if (ps >> extra || c.metric.empty() || c.metric[0] != '/' || (c.op != "<=" && c.op != ">=") ||
        limit.empty())
      throw ConfigError("bench case " + case_name + ": target clause '" + part +
                        "' is not 'JSON-pointer <= number' or 'JSON-pointer >= number'");
    try {
      std::size_t used = 0;
      c.limit = std::stod(limit, &used);
      if (used != limit.size()) throw std::invalid_argument(limit);
    } catch (const std::exception&) {
      throw ConfigError("bench case " + case_name + ": target clause '" + part + "': '" + limit +
                        "' is not a number");
    }
    out.push_back(c);
  }
  if (out.empty()) throw ConfigError("bench case " + case_name + ": empty target");
  return out;
}

}  // namespace

void check_target_spec(const std::string& spec, const std::string& case_name) {
  parse(spec, case_name);
}

nlohmann::ordered_json evaluate_target(const std::string& spec, const nlohmann::ordered_json& result) {
  nlohmann::ordered_json t = {{"spec", spec}, {"checks", nlohmann::ordered_json::array()}};
  bool pass = true;
  for (const Clause& c : parse(spec, result.value("case", std::string("?")))) {
    nlohmann::ordered_json check = {{"metric", c.metric}, {"op", c.op}, {"limit", c.limit}};
    const nlohmann::json::json_pointer ptr(c.metric);
    if (!result.contains(ptr) || !result.at(ptr).is_number()) {
      check["value"] = nullptr;
      check["pass"] = false;
      check["why"] = "not measured by this run";
    } else {
      const double v = result.at(ptr).get<double>();
      check["value"] = v;
      check["pass"] = c.op == "<=" ? v <= c.limit : v >= c.limit;
    }
    pass = pass && check["pass"].get<bool>();
    t["checks"].push_back(check);
  }
  t["pass"] = pass;
  return t;
}

}  // namespace radstream::app
