// Backend selection: auto picks CUDA when a GPU is present and the CUDA backend is built.
#pragma once
#include <string>

#include "core/enum_table.hpp"
#include "stage/stage.hpp"

namespace radstream {

enum class BackendChoice { Auto, Cpu, Cuda };
inline constexpr EnumTable<BackendChoice, 3> kBackendChoices{
    "backend", {{{BackendChoice::Auto, "auto"}, {BackendChoice::Cpu, "cpu"}, {BackendChoice::Cuda, "cuda"}}}};
inline BackendChoice parse_backend(const std::string& name) {
  return kBackendChoices.parse(name);
}
inline std::string to_string(BackendChoice v) {
  return kBackendChoices.name(v);
}

struct BackendDecision {
  Backend backend = Backend::Cpu;
  std::string reason;  // why, in words, for the log
};

// Resolves the choice. Throws ConfigError when cuda is asked for and cannot be had, saying why.
BackendDecision resolve_backend(BackendChoice choice);

}  // namespace radstream
