#include "recon/recon_params.hpp"

#include "core/param_reader.hpp"
#include "noncart/kaiser_bessel.hpp"

namespace radstream {

ReconParams ReconParams::from_config(const YAML::Node& node) {
  ReconParams p;
  ParamReader reader(node, "recon");
  p.visit(reader);
  reader.finish();
  p.validate(true);  // the caller says whether its command takes the exact methods
  return p;
}

void ReconParams::validate(bool exact_methods) const {
  ParamChecker checker("recon");
  const_cast<ReconParams*>(this)->visit(checker);
  if (is_exact_method(method) && !exact_methods)
    throw ConfigError(std::string("recon.method = ") + to_string(method) +
                      " is the exact path, offline only: radstream recon --method " + to_string(method));
  if (gridding.width % 2)
    throw ConfigError("recon.kernel_width = " + std::to_string(gridding.width) + " must be even");
  beatty_beta(gridding.width, gridding.oversampling);  // throws when undefined
  if (keep_phase && (method == ReconMethod::Gridding || method == ReconMethod::Fbp) &&
      combine.method != CoilCombineMethod::Sense)
    throw ConfigError(
        "complex images (--mrd-pixels complex) need a reconstruction that keeps the phase: "
        "cg-sense, nlinv, or coil_combine sense; recon.method = " +
        to_string(method) + " with coil_combine = " + to_string(combine.method) +
        " (root-sum-of-squares) has none");
}

std::vector<std::string> ReconParams::describe() {
  ReconParams p;
  ParamPrinter printer("recon");
  p.visit(printer);
  return printer.lines();
}

}  // namespace radstream
