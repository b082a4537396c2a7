// What each reconstruction method declares of itself, in one place (default_methods(), which
// default_registry() adds to its stages): its stage chain on
// each backend (its recipe), the groups of keys it reads, whether it streams or runs offline only, how
// `radstream recon` runs it, and its frame deadline. What was once written by hand per method in several
// folders derives from these declarations: the memory budget sums the declared memory of the recipe's stages
// (Registry::bytes), the viewer's panel and the README's method table list the keys, the stream's worker
// reads the deadline, `recon` and the Python module take the route. A new method is its stages' folder, one
// registry line per stage and one entry here; a method made elsewhere (the tests' example method) is one
// Registry::add_method, and `recon.method` then names it like a built-in one.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "recon/recipes.hpp"
#include "recon/recon_params.hpp"
#include "stage/stage.hpp"

namespace radstream {

class Registry;

// How `radstream recon` (and the Python module's recon) runs a method: its stage chain over one frame,
// NLINV's frame-by-frame job on BART's rtnlinv layouts, or the seeds' exact path (direct sums, offline only).
enum class OfflineRoute { Chain, Nlinv, Exact };

struct MethodSpec {
  std::string name;  // the value of the key `method`
  bool live = true;  // false: offline only (radstream recon), never a stream's
  OfflineRoute route = OfflineRoute::Chain;
  std::vector<KeySection> keys;   // the groups of keys it reads, in the viewer panel's order
  std::vector<std::string> only;  // when not empty: of those groups, only these keys
  // Its stage chain on a backend; empty for a method that is not one (the exact path).
  std::function<Recipe(const ReconParams&, Backend)> recipe;
  // Its frame deadline in ms under these settings (0: none now); empty for a method that never has one.
  std::function<double(const ReconParams&)> deadline_ms;
  // Memory it allocates besides its stages' declarations (the exact path's, which has no stages).
  std::function<double(const StageSizes&, const ReconParams&)> own_bytes;

  double deadline(const ReconParams& p) const { return deadline_ms ? deadline_ms(p) : 0.0; }
  // The names of the keys it reads (of its groups, or `only`), in order.
  std::vector<std::string> key_names() const;
};

class MethodTable {
 public:
  void add(MethodSpec m);  // replaces a method of the same name
  // Throws ConfigError naming the method and the known ones.
  const MethodSpec& at(const std::string& name) const;
  const MethodSpec& at(const MethodName& m) const { return at(m.str()); }
  const MethodSpec& at(ReconMethod m) const { return at(to_string(m)); }
  const MethodSpec* find(const std::string& name) const;  // null when there is none
  const std::vector<MethodSpec>& all() const { return methods_; }

 private:
  std::vector<MethodSpec> methods_;
};

// Every built-in method of the program.
MethodTable default_methods();
// The same, made once and never changed: what callers that know only the built-in methods read (the README's
// table, the recon command's key checks); a chain takes its method from its registry (Registry::method).
const MethodTable& builtin_methods();

// The per-slice reconstruction memory of method m for a frame of sizes s: the chain's copies of the frame
// (samples, trajectory, weights, on the host and on the backend), its outputs and state, the declared memory
// of the recipe's stages and the method's own, times 1.25 for plans, tables and the allocator's slack.
double method_bytes(const Registry& registry, const MethodSpec& m, const StageSizes& s, const ReconParams& p,
                    Backend backend);

}  // namespace radstream
