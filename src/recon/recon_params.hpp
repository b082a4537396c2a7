// All reconstruction settings in one struct: the method, the backend and each stage's parameters. Read from
// the `recon:` section of a config file or set from the command line; validated against the declared ranges.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/enum_table.hpp"
#include "nlinv/nlinv_params.hpp"
#include "recon/backend.hpp"
#include "stages/cg_sense/cg_sense.hpp"
#include "stages/coil_combine/coil_combine.hpp"
#include "stages/density/density.hpp"
#include "stages/fbp/fbp.hpp"
#include "stages/fft/fft.hpp"
#include "stages/gridding/gridding.hpp"

namespace radstream {

// fhd and cg-exact are the seeds' exact path (exact/exact_recon.hpp): direct sums with the field model,
// offline only (radstream recon), with the cg keys' iterations and lambda. nlinv (nlinv/nlinv_engine.hpp)
// runs as the nlinv stage in streams and on BART's rtnlinv layouts in radstream recon.
enum class ReconMethod { Gridding, Fbp, CgSense, Fhd, CgExact, Nlinv };
inline constexpr EnumTable<ReconMethod, 6> kReconMethods{"reconstruction method",
                                                         {{{ReconMethod::Gridding, "gridding"},
                                                           {ReconMethod::Fbp, "fbp"},
                                                           {ReconMethod::CgSense, "cg-sense"},
                                                           {ReconMethod::Fhd, "fhd", true},
                                                           {ReconMethod::CgExact, "cg-exact", true},
                                                           {ReconMethod::Nlinv, "nlinv"}}}};
inline bool is_exact_method(ReconMethod m) {
  return m == ReconMethod::Fhd || m == ReconMethod::CgExact;
}
inline std::string to_string(ReconMethod v) {
  return kReconMethods.name(v);
}

// A reconstruction method by its name (the key `method`): one of the built-in methods above or one that a
// registry adds (recon/registry.hpp: Registry::add_method). Which names exist is the registry's to say: the
// one that builds the chain checks it (Registry::method).
class MethodName {
 public:
  MethodName(ReconMethod m) : name_(kReconMethods.name(m)) {}  // NOLINT(google-explicit-constructor)
  explicit MethodName(std::string name) : name_(std::move(name)) {}
  const std::string& str() const { return name_; }
  bool operator==(const MethodName&) const = default;
  bool operator==(ReconMethod m) const { return name_ == kReconMethods.name(m); }

 private:
  std::string name_;
};
inline std::string to_string(const MethodName& m) {
  return m.str();
}

// The values the key `method` takes, as an EnumTable offers its enum's (core/param_reader.hpp's visitors):
// the built-in names (the help's list, the viewer's box), and any other well-formed name, for a method a
// registry adds. A name no registry knows is refused where the chain is made, with the known names.
struct MethodNames {
  const char* what = "reconstruction method";
  // Throws ConfigError for a name that cannot be a method's: empty, over 64 characters, or other than
  // lower-case letters, digits, '-' and '_' after a letter.
  MethodName parse(std::string_view s) const;
  const std::string& name(const MethodName& m) const { return m.str(); }
  std::string list(const char* sep = ", ") const { return kReconMethods.list(sep); }
};
inline constexpr MethodNames kMethodNames{};

// The groups of reconstruction keys, one per stage's parameters: a method declares which it reads
// (recon/methods.hpp).
enum class KeySection { Density, Gridding, Fft, Combine, Fbp, Cg, Nlinv };

struct ReconParams {
  MethodName method = ReconMethod::Gridding;
  BackendChoice backend = BackendChoice::Auto;
  int threads = 0;               // CPU threads, 0 = all
  bool cuda_graph = true;        // CUDA: capture the per-frame chain once as a CUDA graph and replay it
  bool batch_partitions = true;  // a stack of stars: gridding/fbp with rss over every z position at once
  DensityParams density;
  GriddingParams gridding;
  FftParams fft;
  CoilCombineParams combine;
  FbpParams fbp;
  CgSenseParams cg;
  NlinvParams nlinv;
  // Not a key: set by --mrd-pixels complex. The recipe keeps the complex image (the "solution" buffer,
  // ReconChain::complex_image()) before its magnitude: cg-sense, nlinv, or coil_combine sense.
  bool keep_phase = false;

  template <class V>
  void visit(V& v) {
    v.choice("method", method, kMethodNames,
             "reconstruction method, built in or registered (fbp: filtered backprojection; cg-sense: "
             "iterative SENSE with coil maps; fhd, "
             "cg-exact: the exact path, recon only; nlinv: nonlinear inversion, image and coils together)");
    v.choice("backend", backend, kBackendChoices, "where to reconstruct (auto: CUDA when a GPU is present)");
    v.field("threads", threads, 0, 1024, "CPU worker threads (0 = all hardware threads)");
    v.field("cuda_graph", cuda_graph,
            "CUDA backend: capture the per-frame stages once as a CUDA graph and replay it each frame");
    v.field("batch_partitions", batch_partitions,
            "a stack of stars by gridding or fbp with rss: every z position in one batch through one chain "
            "(false: one chain per z position)");
    density.visit(v);
    gridding.visit(v);
    fft.visit(v);
    combine.visit(v);
    fbp.visit(v);
    cg.visit(v);
    nlinv.visit(v);
  }
  // The keys of one group.
  template <class V>
  void visit_section(KeySection s, V& v) {
    switch (s) {
      case KeySection::Density:
        return density.visit(v);
      case KeySection::Gridding:
        return gridding.visit(v);
      case KeySection::Fft:
        return fft.visit(v);
      case KeySection::Combine:
        return combine.visit(v);
      case KeySection::Fbp:
        return fbp.visit(v);
      case KeySection::Cg:
        return cg.visit(v);
      case KeySection::Nlinv:
        return nlinv.visit(v);
    }
  }

  // Reads the keys of `node` (the `recon:` map) over the defaults. Throws ConfigError naming a bad key.
  static ReconParams from_config(const YAML::Node& node);
  // Checks ranges and combinations (e.g. kernel width even, Beatty's beta defined). Throws ConfigError. The
  // exact methods (offline only) are refused unless exact_methods says this is the recon command.
  void validate(bool exact_methods = false) const;
  // One line per key: name, default, range, help.
  static std::vector<std::string> describe();
};

}  // namespace radstream
