#include "recon/registry.hpp"

#include "core/error.hpp"
#include "stages/cg_sense/cg_sense.hpp"
#include "stages/coil_combine/coil_combine.hpp"
#include "stages/deapodize/deapodize.hpp"
#include "stages/density/density.hpp"
#include "stages/fbp/fbp.hpp"
#include "stages/fft/fft.hpp"
#include "stages/gridding/gridding.hpp"
#include "stages/nlinv/nlinv.hpp"

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

void Registry::add_twins(const std::string& name, StageFactory cpu, StageFactory cuda, StageBytes bytes) {
  if (cpu) add(name, Backend::Cpu, std::move(cpu));
  if (cuda) add(name, Backend::Cuda, std::move(cuda));
  if (bytes) declare_bytes(name, std::move(bytes));
}

void Registry::declare_bytes(const std::string& name, StageBytes bytes) {
  bytes_[name] = std::move(bytes);
}

double Registry::bytes(const std::string& name, const StageSizes& s, const ReconParams& p) const {
  const auto it = bytes_.find(name);
  if (it == bytes_.end())
    throw ConfigError("stage '" + name +
                      "' declares no memory (Registry::add_twins' bytes): the budget cannot "
                      "admit a stream that runs it");
  return it->second(s, p);
}

namespace {
// The combination's parameters with the reconstruction's wish for the phase (complex images).
CoilCombineParams combine_params(const ReconParams& p) {
  CoilCombineParams c = p.combine;
  c.keep_phase = p.keep_phase;
  return c;
}
}  // namespace

void register_stages(Registry& r) {
  using P = const ReconParams&;
  using S = const StageSizes&;
  r.add_twins(
      "density", [](P p) { return make_density_cpu(p.density); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_density_cuda(p.density); }),
      [](S s, P) { return density_bytes(s); });
  r.add_twins(
      "gridding", [](P p) { return make_gridding_cpu(p.gridding); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_gridding_cuda(p.gridding); }),
      [](S s, P p) { return gridding_bytes(s, p.gridding); });
  r.add_twins(
      "density_gridding", [](P p) { return make_density_gridding_cpu(p.density.method, p.gridding); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_density_gridding_cuda(p.density.method, p.gridding); }),
      [](S s, P p) { return density_bytes(s) + gridding_bytes(s, p.gridding); });
  r.add_twins(
      "fft", [](P p) { return make_fft_cpu(p.fft, FftDirection::Inverse); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_fft_cuda(p.fft, FftDirection::Inverse); }),
      [](S s, P p) { return fft_bytes(s, p.gridding.oversampling); });
  r.add_twins(
      "fft_forward", [](P p) { return make_fft_cpu(p.fft, FftDirection::Forward); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_fft_cuda(p.fft, FftDirection::Forward); }),
      [](S s, P p) { return fft_bytes(s, p.gridding.oversampling); });
  r.add_twins("fft_deapodize_combine", nullptr,
              RADSTREAM_CUDA_TWIN([](P p) { return make_fused_image_cuda(p.gridding.kernel()); }),
              [](S s, P p) { return fused_image_bytes(s, p.gridding.oversampling); });
  r.add_twins(
      "deapodize", [](P p) { return make_deapodize_cpu(p.gridding.kernel()); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_deapodize_cuda(p.gridding.kernel()); }),
      [](S s, P) { return deapodize_bytes(s); });
  r.add_twins(
      "fbp_project", [](P p) { return make_fbp_project_cpu(p.fbp, p.fft); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_fbp_project_cuda(p.fbp, p.fft); }),
      [](S s, P) { return fbp_project_bytes(s); });
  r.add_twins(
      "backproject", [](P p) { return make_backproject_cpu(p.fbp); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_backproject_cuda(p.fbp); }),
      [](S s, P) { return backproject_bytes(s); });
  r.add_twins(
      "coil_combine", [](P p) { return make_coil_combine_cpu(combine_params(p)); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_coil_combine_cuda(combine_params(p)); }),
      [](S s, P) { return coil_combine_bytes(s); });
  r.add_twins(
      "magnitude", [](P) { return make_magnitude_cpu(); },
      RADSTREAM_CUDA_TWIN([](P) { return make_magnitude_cuda(); }),
      [](S s, P) { return magnitude_bytes(s); });
  r.add_twins(
      "cg_sense", [](P p) { return make_cg_sense_cpu(p.cg, p.gridding.kernel(), p.fft.planner); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_cg_sense_cuda(p.cg, p.gridding.kernel()); }),
      [](S s, P p) { return cg_sense_bytes(s, p.gridding.oversampling); });
  r.add_twins(
      "nlinv", [](P p) { return make_nlinv_cpu(p.nlinv, p.fft.planner); },
      RADSTREAM_CUDA_TWIN([](P p) { return make_nlinv_cuda(p.nlinv); }),
      [](S s, P p) { return nlinv_bytes(s, p.nlinv, p.gridding.oversampling); });
}

Registry default_registry() {
  Registry r;
  register_stages(r);
  for (const MethodSpec& m : builtin_methods().all()) r.add_method(m);
  return r;
}

const MethodSpec& Registry::method(const MethodName& name) const {
  try {
    return methods_.at(name);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("recon.method: ") + e.what());
  }
}

}  // namespace radstream
