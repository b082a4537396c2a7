// The stage registry: factories keyed by stage name and backend. Built explicitly (no static registration, no
// global state): default_registry() adds every stage, one line per stage for its CPU and CUDA twins.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "recon/recon_params.hpp"
#include "stage/stage.hpp"

namespace radstream {

using StageFactory = std::function<std::unique_ptr<Stage>(const ReconParams&)>;

class Registry {
 public:
  void add(const std::string& name, Backend backend, StageFactory factory);
  // A stage's twins in one line: the CPU factory, and the CUDA one (RADSTREAM_CUDA_TWIN(...): null in a build
  // without CUDA, where the CUDA twin is not compiled; null also for a stage that has only one twin).
  void add_twins(const std::string& name, StageFactory cpu, StageFactory cuda);
  bool has(const std::string& name, Backend backend) const;
  // Throws ConfigError when no such stage exists for the backend.
  std::unique_ptr<Stage> create(const std::string& name, Backend backend, const ReconParams& p) const;
  std::vector<std::string> names(Backend backend) const;

 private:
  std::map<std::pair<std::string, Backend>, StageFactory> factories_;
};

// The CUDA twin's factory in a CUDA build, nothing otherwise (its symbols exist only in CUDA builds).
#ifdef RADSTREAM_HAVE_CUDA
#define RADSTREAM_CUDA_TWIN(...) __VA_ARGS__
#else
#define RADSTREAM_CUDA_TWIN(...) nullptr
#endif

// Every stage of the program, both backends (the CUDA twins in CUDA builds).
void register_stages(Registry& r);
Registry default_registry();

}  // namespace radstream
