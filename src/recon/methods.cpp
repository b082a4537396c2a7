#include "recon/methods.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/key_names.hpp"
#include "recon/registry.hpp"

namespace radstream {

std::vector<std::string> MethodSpec::key_names() const {
  ReconParams p;
  KeyNames names;
  for (const KeySection s : keys) p.visit_section(s, names);
  if (only.empty()) return names.keys;
  std::vector<std::string> kept;
  for (const auto& k : names.keys)
    if (std::find(only.begin(), only.end(), k) != only.end()) kept.push_back(k);
  return kept;
}

void MethodTable::add(MethodSpec m) {
  for (auto& known : methods_)
    if (known.name == m.name) {
      known = std::move(m);
      return;
    }
  methods_.push_back(std::move(m));
}

const MethodSpec* MethodTable::find(const std::string& name) const {
  for (const auto& m : methods_)
    if (m.name == name) return &m;
  return nullptr;
}

const MethodSpec& MethodTable::at(const std::string& name) const {
  if (const MethodSpec* m = find(name)) return *m;
  std::string known;
  for (const auto& m : methods_) known += (known.empty() ? "" : ", ") + m.name;
  throw ConfigError(fmt::format("no reconstruction method '{}' (known: {})", name, known));
}

MethodTable default_methods() {
  using K = KeySection;
  MethodTable t;
  MethodSpec gridding;
  gridding.name = to_string(ReconMethod::Gridding);
  gridding.keys = {K::Density, K::Gridding, K::Fft, K::Combine};
  gridding.recipe = gridding_recipe;
  t.add(gridding);

  MethodSpec fbp;
  fbp.name = to_string(ReconMethod::Fbp);
  fbp.keys = {K::Fbp, K::Fft, K::Combine};
  fbp.recipe = fbp_recipe;
  t.add(fbp);

  MethodSpec cg;
  cg.name = to_string(ReconMethod::CgSense);
  cg.keys = {K::Cg, K::Gridding, K::Fft};  // the gridding keys: the NUFFT's kernel and oversampling
  cg.recipe = cg_sense_recipe;
  cg.deadline_ms = [](const ReconParams& p) { return p.cg.deadline_ms; };
  t.add(cg);

  // The seeds' exact path: direct sums with the field model, offline only, with the cg keys' iterations and
  // lambda; no stages, its own memory (the gridded start on the host).
  for (const ReconMethod e : {ReconMethod::Fhd, ReconMethod::CgExact}) {
    MethodSpec exact;
    exact.name = to_string(e);
    exact.live = false;
    exact.route = OfflineRoute::Exact;
    exact.keys = {K::Cg};
    exact.only = {"iterations", "lambda"};
    exact.own_bytes = [](const StageSizes& s, const ReconParams& p) {
      return 2 * s.grid(p.gridding.oversampling);
    };
    t.add(exact);
  }

  MethodSpec nlinv;
  nlinv.name = to_string(ReconMethod::Nlinv);
  nlinv.route = OfflineRoute::Nlinv;
  nlinv.keys = {K::Nlinv, K::Fft};
  nlinv.recipe = nlinv_recipe;
  nlinv.deadline_ms = [](const ReconParams& p) { return p.nlinv.deadline_ms; };
  t.add(nlinv);
  return t;
}

const MethodTable& builtin_methods() {
  static const MethodTable table = default_methods();
  return table;
}

double method_bytes(const Registry& registry, const MethodSpec& m, const StageSizes& s, const ReconParams& p,
                    Backend backend) {
  const double frame =
      s.samples_all() + s.window * s.samples * 3 * StageSizes::kReal;  // + trajectory, weights
  double need =
      2 * frame + 8 * s.image();  // the frame on the host and its device or work copy; outputs, state
  if (m.recipe)
    for (const RecipeStep& step : m.recipe(p, backend).steps) need += registry.bytes(step.stage, s, p);
  if (m.own_bytes) need += m.own_bytes(s, p);
  return 1.25 * need;
}

}  // namespace radstream
