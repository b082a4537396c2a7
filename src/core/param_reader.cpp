#include "core/param_reader.hpp"

namespace radstream {

ParamReader::ParamReader(const YAML::Node& node, std::string section)
    : node_(node), section_(std::move(section)) {
  if (node_ && !node_.IsNull() && !node_.IsMap())
    throw ConfigError(fmt::format("{}: expected a map of key: value", section_));
}

void ParamReader::field(const char* key, bool& value, const char*) {
  seen_.insert(key);
  if (!node_ || !node_[key]) return;
  try {
    value = node_[key].as<bool>();
  } catch (const YAML::Exception&) {
    throw ConfigError(fmt::format("{}.{}: '{}' is not true or false", section_, key, scalar(key)));
  }
}

void ParamReader::field(const char* key, std::string& value, const char*) {
  seen_.insert(key);
  if (!node_ || !node_[key]) return;
  if (!node_[key].IsScalar()) throw ConfigError(fmt::format("{}.{}: expected a single value", section_, key));
  value = node_[key].Scalar();
}

void ParamReader::field(const char* key, std::vector<std::string>& value, const char*) {
  seen_.insert(key);
  if (!node_ || !node_[key]) return;
  const YAML::Node n = node_[key];
  value.clear();
  if (n.IsScalar()) {
    value.push_back(n.Scalar());
    return;
  }
  if (!n.IsSequence()) throw ConfigError(fmt::format("{}.{}: expected a list of values", section_, key));
  for (const auto& e : n) {
    if (!e.IsScalar())
      throw ConfigError(fmt::format("{}.{}: expected a list of single values", section_, key));
    value.push_back(e.Scalar());
  }
}

std::string ParamReader::scalar(const char* key) const {
  const auto n = node_[key];
  return n.IsScalar() ? n.Scalar() : std::string("<not a scalar>");
}

void ParamReader::finish() const {
  if (!node_ || !node_.IsMap()) return;
  for (const auto& kv : node_) {
    const auto key = kv.first.as<std::string>();
    if (!seen_.count(key)) {
      std::string known;
      for (const auto& k : seen_) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError(fmt::format("{}: unknown key '{}' (known keys: {})", section_, key, known));
    }
  }
}

}  // namespace radstream
