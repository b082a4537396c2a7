#include "recon/recon_params.hpp"

#include "core/param_reader.hpp"
#include "noncart/kaiser_bessel.hpp"

namespace radstream {

ReconParams ReconParams::from_config(const YAML::Node& node) {
  ReconParams p;
  ParamReader reader(node, "recon");
  p.visit(reader);
  reader.finish();
  p.validate();
  return p;
}

void ReconParams::validate() const {
  ParamChecker checker("recon");
  const_cast<ReconParams*>(this)->visit(checker);
  if (gridding.width % 2)
    throw ConfigError("recon.kernel_width = " + std::to_string(gridding.width) + " must be even");
  beatty_beta(gridding.width, gridding.oversampling);  // throws when undefined
}

std::vector<std::string> ReconParams::describe() {
  ReconParams p;
  ParamPrinter printer("recon");
  p.visit(printer);
  return printer.lines();
}

}  // namespace radstream
