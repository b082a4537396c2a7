// Backend selection: auto picks CUDA when a GPU is present and the CUDA backend is built.
#pragma once
#include <string>

#include "pipeline/stage.hpp"

namespace radstream {

enum class BackendChoice { Auto, Cpu, Cuda };
BackendChoice parse_backend(const std::string& name);  // auto|cpu|cuda
std::string to_string(BackendChoice b);

struct BackendDecision {
  Backend backend = Backend::Cpu;
  std::string reason;  // why, in words, for the log
};

// Resolves the choice. Throws ConfigError when cuda is asked for and cannot be had, saying why.
BackendDecision resolve_backend(BackendChoice choice);

}  // namespace radstream
