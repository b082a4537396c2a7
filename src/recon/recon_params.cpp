#include "recon/recon_params.hpp"

#include <algorithm>

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

MethodName MethodNames::parse(std::string_view s) const {
  for (const auto& i : kReconMethods.items)
    if (s == i.name) return i.value;
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  };
  if (s.empty() || s.size() > 64 || !(s[0] >= 'a' && s[0] <= 'z') ||
      !std::all_of(s.begin(), s.end(), allowed))
    throw ConfigError(std::string(what) + " '" + std::string(s) + "' is not one of " + list() +
                      " (nor a registered method's name: lower-case letters, digits, '-' and '_')");
  return MethodName(std::string(s));
}

void ReconParams::validate(bool exact_methods) const {
  ParamChecker checker("recon");
  const_cast<ReconParams*>(this)->visit(checker);
  if ((method == ReconMethod::Fhd || method == ReconMethod::CgExact) && !exact_methods)
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
