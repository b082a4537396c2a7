#include "app/declared_options.hpp"

#include <algorithm>

namespace radstream::app {

namespace {
std::string long_name(const std::string& key) {
  std::string o = "--" + key;
  std::replace(o.begin(), o.end(), '_', '-');
  return o;
}
std::string first_long(const std::string& names) {
  std::size_t pos = 0;
  while (pos < names.size()) {
    const std::size_t end = std::min(names.find(',', pos), names.size());
    const std::string n = names.substr(pos, end - pos);
    if (n.rfind("--", 0) == 0) return n;
    pos = end + 1;
  }
  return names.substr(0, names.find(','));
}
// Keys that hold seconds without saying so in their name (command-line settings only, no YAML file uses
// them).
bool seconds_without_unit(const std::string& key) {
  for (const char* k : {"duration", "wait", "stale_after", "screenshot_after", "screenshot_every",
                        "close_after", "header_every", "max_gap"})
    if (key == k) return true;
  return false;
}

// Every duration's option says its unit: "--mrd-idle-timeout" becomes "--mrd-idle-timeout-s", "--duration"
// "--duration-s"; the old spelling is returned, to be kept as a hidden alias for one release.
std::string with_unit(std::string& names, const std::string& key, const char*& type) {
  const bool seconds = seconds_without_unit(key) || (key.size() > 2 && key.ends_with("_s"));
  const std::string name = first_long(names);
  if (!seconds || name.ends_with("-s") || name.rfind("--", 0) != 0) return {};
  names.replace(names.find(name), name.size(), name + "-s");
  type = "SECONDS";
  return name;
}

}  // namespace

void DeclaredOptions::add_key(CLI::App& app, const std::string& section, const std::string& key, bool is_bool,
                              const std::string& help, const Style& style, bool is_list, const char* type) {
  if (!style.only.empty() && std::find(style.only.begin(), style.only.end(), key) == style.only.end()) return;
  std::string names = long_name(key);
  bool sets_false = false;
  std::string text = help;
  for (const CliName& n : style.names)
    if (n.key == key) {
      names = n.names;
      sets_false = n.sets_false;
      if (!n.help.empty()) text = n.help + " (sets " + section + "." + key + ": false)";
    }
  if (names.empty()) return;  // hidden from this command
  const std::string alias = is_bool ? std::string() : with_unit(names, key, type);
  const std::string name = first_long(names);
  for (Entry& e : entries_)
    if (e.name == name) {  // shared by two sections (demo's --slices: the simulator's and the stream's)
      e.targets.push_back({section, key, sets_false});
      return;
    }
  Entry& e = entries_.emplace_back();
  e.name = name;
  e.targets.push_back({section, key, sets_false});
  const bool flag = is_bool && (!style.bool_values || sets_false);
  e.list = is_list;
  if (is_list) {
    e.option = app.add_option_function<std::vector<std::string>>(
        names, [&e](const std::vector<std::string>& v) { e.values = v; }, text);
  } else if (flag) {
    e.option = app.add_flag_callback(
        names, [&e] { e.value = "true"; }, text);
  } else {
    e.option = app.add_option_function<std::string>(
        names, [&e](const std::string& s) { e.value = s; }, text);
  }
  if (!flag) e.option->type_name(type);
  e.option->group(section + kDeclaredGroupSuffix);
  if (!alias.empty())  // the old spelling, hidden from --help (an empty group), for one release
    e.alias = app.add_option_function<std::string>(
                     alias, [&e](const std::string& v) { e.value = v; }, text)
                  ->group("");
  if (std::find(style.required.begin(), style.required.end(), key) != style.required.end())
    e.option->required();
}

std::vector<DeclaredOptions::Given> DeclaredOptions::given_for(const std::string& section) const {
  std::vector<Given> out;
  for (const Entry& e : entries_) {
    if (!e.option || e.option->count() + (e.alias ? e.alias->count() : 0) == 0) continue;
    for (const Target& t : e.targets)
      if (t.section == section)
        out.push_back({t.key, t.sets_false ? "false" : e.value, e.name, e.list ? &e.values : nullptr});
  }
  return out;
}

bool DeclaredOptions::given(const std::string& section, const std::string& key) const {
  for (const Given& g : given_for(section))
    if (g.key == key) return true;
  return false;
}

std::optional<std::string> DeclaredOptions::value(const std::string& section, const std::string& key) const {
  for (const Given& g : given_for(section))
    if (g.key == key) return g.value;
  return std::nullopt;
}

std::vector<std::string> DeclaredOptions::given_keys(const std::string& section) const {
  std::vector<std::string> out;
  for (const Given& g : given_for(section)) out.push_back(g.key);
  return out;
}

std::string DeclaredOptions::option_of(const std::string& section, const std::string& key) const {
  for (const Entry& e : entries_)
    for (const Target& t : e.targets)
      if (t.section == section && t.key == key) return e.name;
  return "";
}

}  // namespace radstream::app
