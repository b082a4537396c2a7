// Parameters declared in one place. A parameter struct lists its fields once, in a `visit` member:
//
//   template <class V> void visit(V& v) {
//     v.field("width", width, 2, 16, "Kaiser-Bessel kernel width in grid cells");
//     v.choice("dcf", dcf, kDcfMethods, "density compensation");   // an EnumTable (core/enum_table.hpp)
//
// (a choice's table is an EnumTable or one of its shape: parse, name and list; recon/recon_params.hpp's
// MethodNames, whose values are names a registry may add to)
//   }
//
// and the same list drives parsing from YAML (ParamReader: unknown keys and out-of-range values are rejected
// with a message that names the key), range checks of values set in code (ParamChecker) and the documentation
// (ParamPrinter and ParamMarkdown: `radstream config-keys [--markdown]`, the README's table), the
// command-line options (app/param_options.hpp) and the viewer's widgets (viewer/param_widgets.hpp).
#pragma once
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/enum_table.hpp"
#include "core/error.hpp"

namespace radstream {

// "frames.window = 0 must be >= 1": the bound that was crossed (never the other end, which may be a
// 309-digit double).
template <class T>
std::string out_of_range(const std::string& section, const char* key, T v, T lo, T hi) {
  const bool below = !(v >= lo);
  const T bound = below ? lo : hi;
  return fmt::format("{}.{} = {} must be {} {}", section, key, v, below ? ">=" : "<=", bound);
}

class ParamReader {
 public:
  ParamReader(const YAML::Node& node, std::string section);

  template <class T>
  void field(const char* key, T& value, T lo, T hi, const char* /*help*/) {
    seen_.insert(key);
    if (!node_ || !node_[key]) return;
    T v{};
    try {
      v = node_[key].template as<T>();
    } catch (const YAML::Exception&) {
      throw ConfigError(fmt::format("{}.{}: '{}' is not {}", section_, key, scalar(key),
                                    std::is_integral_v<T> ? "an integer" : "a number"));
    }
    if (!(v >= lo && v <= hi)) throw ConfigError(out_of_range(section_, key, v, lo, hi));
    value = v;
  }
  void field(const char* key, bool& value, const char* help);
  void field(const char* key, std::string& value, const char* help);
  // A list (a YAML sequence, or one value; the command line's repeated values).
  void field(const char* key, std::vector<std::string>& value, const char* help);

  template <class E, class Table>
  void choice(const char* key, E& value, const Table& table, const char* /*help*/) {
    seen_.insert(key);
    if (!node_ || !node_[key]) return;
    try {
      value = table.parse(scalar(key));
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}.{}: {}", section_, key, e.what()));
    }
  }
  // Throws ConfigError listing any key of the node that no field declared.
  void finish() const;

 private:
  std::string scalar(const char* key) const;
  YAML::Node node_;
  std::string section_;
  std::set<std::string> seen_;
};

// Checks values set in code (e.g. from the command line) against the declared ranges.
class ParamChecker {
 public:
  explicit ParamChecker(std::string section) : section_(std::move(section)) {}
  template <class T>
  void field(const char* key, const T& value, T lo, T hi, const char*) {
    if (!(value >= lo && value <= hi)) throw ConfigError(out_of_range(section_, key, value, lo, hi));
  }
  void field(const char*, const bool&, const char*) {}
  void field(const char*, const std::string&, const char*) {}
  template <class E, class Table>
  void choice(const char*, const E&, const Table&, const char*) {}

 private:
  std::string section_;
};

// Lists the declared keys with their defaults, ranges and help, one per line.
class ParamPrinter {
 public:
  explicit ParamPrinter(std::string section) : section_(std::move(section)) {}
  template <class T>
  void field(const char* key, const T& value, T lo, T hi, const char* help) {
    lines_.push_back(fmt::format("{}.{} (default {}, range {}..{}): {}", section_, key, value, lo, hi, help));
  }
  void field(const char* key, const bool& value, const char* help) {
    lines_.push_back(fmt::format("{}.{} (default {}): {}", section_, key, value, help));
  }
  void field(const char* key, const std::string& value, const char* help) {
    lines_.push_back(fmt::format("{}.{} (default {}): {}", section_, key, value, help));
  }
  template <class E, class Table>
  void choice(const char* key, const E& value, const Table& table, const char* help) {
    lines_.push_back(fmt::format("{}.{} (default {}, one of {}): {}", section_, key, table.name(value),
                                 table.list(" | "), help));
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::string section_;
  std::vector<std::string> lines_;
};

// The same list as Markdown table rows: | section.key | default | values | meaning | (the README's table).
class ParamMarkdown {
 public:
  explicit ParamMarkdown(std::string section) : section_(std::move(section)) {}
  template <class T>
  void field(const char* key, const T& value, T lo, T hi, const char* help) {
    row(key, fmt::format("{}", value), fmt::format("{}..{}", lo, hi), help);
  }
  void field(const char* key, const bool& value, const char* help) {
    row(key, value ? "true" : "false", "true, false", help);
  }
  void field(const char* key, const std::string& value, const char* help) {
    row(key, value.empty() ? "(off)" : value, "text", help);
  }
  template <class E, class Table>
  void choice(const char* key, const E& value, const Table& table, const char* help) {
    row(key, table.name(value), table.list(", "), help);
  }
  const std::vector<std::string>& rows() const { return rows_; }

 private:
  void row(const char* key, const std::string& def, const std::string& range, const char* help) {
    std::string h(help);
    for (auto& c : h)
      if (c == '|') c = '/';
    rows_.push_back(fmt::format("| {}.{} | {} | {} | {} |", section_, key, def, range, h));
  }
  std::string section_;
  std::vector<std::string> rows_;
};

}  // namespace radstream
