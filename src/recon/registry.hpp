// The stage registry: factories keyed by stage name and backend. Built explicitly (no static registration, no
// global state): default_registry() adds the CPU stages and, in a CUDA build, the CUDA stages.
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
  bool has(const std::string& name, Backend backend) const;
  // Throws ConfigError when no such stage exists for the backend.
  std::unique_ptr<Stage> create(const std::string& name, Backend backend, const ReconParams& p) const;
  std::vector<std::string> names(Backend backend) const;

 private:
  std::map<std::pair<std::string, Backend>, StageFactory> factories_;
};

void register_cpu_stages(Registry& r);
void register_cuda_stages(Registry& r);  // CUDA builds only
Registry default_registry();

}  // namespace radstream
