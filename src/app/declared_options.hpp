// Command-line options generated from parameter declarations: every option of every command comes from a
// params struct's visit() (core/param_reader.hpp), one option per key, with the key's help, range and
// default, and the value read by the same ParamReader as the YAML files (range checks, messages naming the
// option). A command only says, where its option is not the key's own name (`--overwrite` for
// sinks.record_overwrite), how it names the key; a flag may set a bool key to false (`--connect` for
// stream.bind: false). Options are grouped in the help by section; Cli.EveryOptionComesFromADeclaration
// checks that no command adds one by hand.
#pragma once
#include <CLI/CLI.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/enum_table.hpp"
#include "core/param_reader.hpp"

namespace radstream::app {

// How a command names a declared key: names in CLI11's form ("--overwrite", "-o,--out"); sets_false: a flag
// that sets the bool key to false. An empty names string hides the key from this command.
struct CliName {
  std::string key;
  std::string names;
  bool sets_false = false;
  std::string help;  // a flag that sets false says what it does (the key's help says what true means)
  CliName(std::string k, std::string n, bool f = false, std::string h = {})
      : key(std::move(k)), names(std::move(n)), sets_false(f), help(std::move(h)) {}
};

// The help group of every generated option ends with this ("stream settings:"; the test tells them from
// hand-written ones).
inline constexpr const char* kDeclaredGroupSuffix = " settings";

class DeclaredOptions {
 public:
  struct Style {
    std::vector<CliName> names;         // renames (and hides) of some keys
    std::vector<std::string> only;      // when not empty: only these keys become options
    std::vector<std::string> required;  // keys whose option must be given
    bool bool_values = false;           // bools take a value (--warm-start false) instead of being flags
    Style(std::vector<CliName> n = {}, std::vector<std::string> o = {}, std::vector<std::string> r = {},
          bool b = false)
        : names(std::move(n)), only(std::move(o)), required(std::move(r)), bool_values(b) {}
  };

  // Adds one option per key that `defaults`' visit() declares, in the help group "<section> settings". An
  // option name another section already added is shared: the value goes to both keys.
  template <class P>
  void add(CLI::App& app, const std::string& section, P defaults, const Style& style = {}) {
    Adder adder(*this, app, section, style);
    defaults.visit(adder);
  }
  // The values given on the command line for `section`'s keys, over p (range-checked; a bad value throws
  // ConfigError naming the option and the value).
  template <class P>
  void apply(const std::string& section, P& p) const {
    for (const Given& g : given_for(section)) {
      YAML::Node node;
      if (g.list) {
        for (const auto& x : *g.list) node[g.key].push_back(x);
      } else {
        node[g.key] = g.value;
      }
      try {
        ParamReader reader(node, section);
        p.visit(reader);
        reader.finish();
      } catch (const ConfigError& e) {
        throw ConfigError(g.option + " " + g.value + ": " + e.what());
      }
    }
  }
  // True when the key's option was given; its value as typed.
  bool given(const std::string& section, const std::string& key) const;
  std::optional<std::string> value(const std::string& section, const std::string& key) const;
  std::vector<std::string> given_keys(const std::string& section) const;
  // The option's long name for a key ("--record-overwrite"), for messages; empty when it has none.
  std::string option_of(const std::string& section, const std::string& key) const;

 private:
  struct Target {
    std::string section, key;
    bool sets_false = false;
  };
  struct Entry {
    CLI::Option* option = nullptr;
    CLI::Option* alias = nullptr;     // a duration's old spelling without its unit (hidden)
    std::string name;                 // the long name, for messages
    std::string value;                // as typed (flags: "true")
    std::vector<std::string> values;  // a list's values
    bool list = false;
    std::vector<Target> targets;
  };
  struct Given {
    std::string key, value, option;
    const std::vector<std::string>* list = nullptr;
  };
  std::deque<Entry> entries_;  // stable addresses for the options' callbacks
  std::vector<Given> given_for(const std::string& section) const;
  // type: what --help shows for the value (INT, FLOAT, SECONDS, MS, CHOICE, BOOL, LIST, TEXT).
  void add_key(CLI::App& app, const std::string& section, const std::string& key, bool is_bool,
               const std::string& help, const Style& style, bool is_list = false, const char* type = "TEXT");
  // A duration whose name lacks its unit is given one ("--mrd-idle-timeout" -> "--mrd-idle-timeout-s"; the
  // names above stay the keys' own), the old spelling a hidden alias: with_unit in declared_options.cpp.

  class Adder {
   public:
    Adder(DeclaredOptions& o, CLI::App& app, std::string section, const Style& style)
        : o_(o), app_(app), section_(std::move(section)), style_(style) {}
    template <class T>
    void field(const char* key, T& value, T lo, T hi, const char* help) {
      o_.add_key(app_, section_, key, false, fmt::format("{} ({}..{}, default {})", help, lo, hi, value),
                 style_, false, number_type<T>(key));
    }
    void field(const char* key, bool& value, const char* help) {
      o_.add_key(app_, section_, key, true, fmt::format("{} (default {})", help, value), style_, false,
                 "BOOL");
    }
    void field(const char* key, std::vector<std::string>& value, const char* help) {
      std::string d;
      for (const auto& x : value) d += (d.empty() ? "" : " ") + x;
      o_.add_key(app_, section_, key, false,
                 d.empty() ? std::string(help) : fmt::format("{} (default {})", help, d), style_, true,
                 "LIST");
    }
    void field(const char* key, std::string& value, const char* help) {
      o_.add_key(app_, section_, key, false,
                 value.empty() ? std::string(help) : fmt::format("{} (default '{}')", help, value), style_);
    }
    template <class E, class Table>
    void choice(const char* key, E& value, const Table& table, const char* help) {
      o_.add_key(app_, section_, key, false,
                 fmt::format("{}: {} (default {})", help, table.list(" | "), table.name(value)), style_,
                 false, "CHOICE");
    }

   private:
    // A number's kind for --help: whole numbers INT; durations by their key's unit (..._s SECONDS, ..._ms
    // MS); other reals FLOAT.
    template <class T>
    static const char* number_type(const std::string& key) {
      if constexpr (std::is_integral_v<T>) {
        return "INT";
      } else {
        if (key.ends_with("_ms")) return "MS";
        if (key.ends_with("_s")) return "SECONDS";
        return "FLOAT";
      }
    }
    DeclaredOptions& o_;
    CLI::App& app_;
    std::string section_;
    const Style& style_;
  };
};

// A command built from one declared struct: its options, and the runner that reads them over the defaults.
template <class Args, class Run>
std::function<int()> declared_command(CLI::App& app, const std::string& section, const Args& defaults,
                                      const DeclaredOptions::Style& style, Run run) {
  auto o = std::make_shared<DeclaredOptions>();
  o->add(app, section, defaults, style);
  return [o, section, defaults, run] {
    Args a = defaults;
    o->apply(section, a);
    return run(a);
  };
}

}  // namespace radstream::app
