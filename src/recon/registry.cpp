#include "recon/registry.hpp"

#include "cg_sense/cg_sense.hpp"
#include "core/error.hpp"
#include "deapodize/deapodize.hpp"
#include "fbp/fbp.hpp"

namespace radstream {

void Registry::add(const std::string& name, Backend backend, StageFactory factory) {
  factories_[{name, backend}] = std::move(factory);
}

bool Registry::has(const std::string& name, Backend backend) const {
  return factories_.count({name, backend}) > 0;
}

std::unique_ptr<Stage> Registry::create(const std::string& name, Backend backend,
                                        const ReconParams& p) const {
  const auto it = factories_.find({name, backend});
  if (it == factories_.end())
    throw ConfigError("no stage '" + name + "' for the " + to_string(backend) + " backend in this build");
  auto stage = it->second(p);
  if (stage->name() != name)  // the key is the stage's name: timings, recipes and logs agree
    throw ConfigError("stage registered as '" + name + "' calls itself '" + stage->name() + "'");
  return stage;
}

std::vector<std::string> Registry::names(Backend backend) const {
  std::vector<std::string> out;
  for (const auto& [key, f] : factories_)
    if (key.second == backend) out.push_back(key.first);
  return out;
}

void register_cpu_stages(Registry& r) {
  r.add("density", Backend::Cpu, [](const ReconParams& p) { return make_density_cpu(p.density); });
  r.add("gridding", Backend::Cpu, [](const ReconParams& p) { return make_gridding_cpu(p.gridding); });
  r.add("fft", Backend::Cpu,
        [](const ReconParams& p) { return make_fft_cpu(p.fft, FftDirection::Inverse); });
  r.add("fft_forward", Backend::Cpu,
        [](const ReconParams& p) { return make_fft_cpu(p.fft, FftDirection::Forward); });
  r.add("deapodize", Backend::Cpu, [](const ReconParams& p) { return make_deapodize_cpu(p.gridding.kernel()); });
  r.add("fbp_project", Backend::Cpu, [](const ReconParams& p) { return make_fbp_project_cpu(p.fbp, p.fft); });
  r.add("backproject", Backend::Cpu, [](const ReconParams& p) { return make_backproject_cpu(p.fbp); });
  r.add("coil_combine", Backend::Cpu, [](const ReconParams& p) { return make_coil_combine_cpu(p.combine); });
  r.add("magnitude", Backend::Cpu, [](const ReconParams&) { return make_magnitude_cpu(); });
  r.add("cg_sense", Backend::Cpu, [](const ReconParams& p) { return make_cg_sense_cpu(p.cg, p.gridding.kernel(), p.fft.planner); });
}

Registry default_registry() {
  Registry r;
  register_cpu_stages(r);
#ifdef RADSTREAM_HAVE_CUDA
  register_cuda_stages(r);
#endif
  return r;
}

}  // namespace radstream
