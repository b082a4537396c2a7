// The stage registry: factories keyed by stage name and backend, each stage's memory declaration, and the
// methods made of the stages. Built explicitly (no static registration, no global state): default_registry()
// adds every stage, one line per stage for its CPU and CUDA twins and its memory, and the built-in methods.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "recon/methods.hpp"
#include "recon/recon_params.hpp"
#include "stage/stage.hpp"

namespace radstream {

using StageFactory = std::function<std::unique_ptr<Stage>(const ReconParams&)>;
// What a stage allocates itself for a frame of these sizes under these settings, in bytes (StageSizes).
using StageBytes = std::function<double(const StageSizes&, const ReconParams&)>;

class Registry {
 public:
  void add(const std::string& name, Backend backend, StageFactory factory);
  // A stage's twins in one line: the CPU factory, and the CUDA one (RADSTREAM_CUDA_TWIN(...): null in a build
  // without CUDA, where the CUDA twin is not compiled; null also for a stage that has only one twin).
  // bytes: the stage's memory declaration (the memory budget sums those of a method's stages).
  void add_twins(const std::string& name, StageFactory cpu, StageFactory cuda, StageBytes bytes = nullptr);
  void declare_bytes(const std::string& name, StageBytes bytes);
  // The stage's declared memory; throws ConfigError naming a stage that declared none.
  double bytes(const std::string& name, const StageSizes& s, const ReconParams& p) const;
  bool has(const std::string& name, Backend backend) const;
  // Throws ConfigError when no such stage exists for the backend.
  std::unique_ptr<Stage> create(const std::string& name, Backend backend, const ReconParams& p) const;
  std::vector<std::string> names(Backend backend) const;

  // The methods (recon/methods.hpp) whose chains these stages make: `recon.method` names one of them.
  void add_method(MethodSpec m) { methods_.add(std::move(m)); }  // replaces one of the same name
  // Throws ConfigError naming the method and the known ones.
  const MethodSpec& method(const MethodName& name) const;
  const MethodTable& methods() const { return methods_; }

 private:
  std::map<std::pair<std::string, Backend>, StageFactory> factories_;
  std::map<std::string, StageBytes> bytes_;
  MethodTable methods_;
};

// The CUDA twin's factory in a CUDA build, nothing otherwise (its symbols exist only in CUDA builds).
#ifdef RADSTREAM_HAVE_CUDA
#define RADSTREAM_CUDA_TWIN(...) __VA_ARGS__
#else
#define RADSTREAM_CUDA_TWIN(...) nullptr
#endif

// Every stage of the program, both backends (the CUDA twins in CUDA builds).
void register_stages(Registry& r);
// Every stage and every built-in method (default_methods()).
Registry default_registry();

}  // namespace radstream
