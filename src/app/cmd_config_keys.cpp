// radstream config-keys [--markdown]: every configuration key with its default, range and meaning, from the
// params structs' visit() (the README's table is this command's --markdown output; a test holds them equal).
#include <iostream>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/param_reader.hpp"
#include "recon/recon_params.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"

namespace radstream::app {
namespace {

template <class Printer>
void print_all(Printer make, auto&& out) {
  ReconParams rp;
  SimParams sp;
  RunConfig rc;
  auto section = [&](const char* name, auto& params) {
    auto p = make(name);
    params.visit(p);
    out(p);
  };
  section("recon", rp);
  section("stream", rc.stream);
  section("frames", rc.frames);
  section("sinks", rc.sinks);
  section("placement", rc.placement);
  section("mrd", rc.mrd);
  section("simulate", sp);
}

int run_config_keys(bool markdown) {
  if (markdown) {
    std::cout << "| key | default | values | meaning |\n|---|---|---|---|\n";
    print_all([](const char* s) { return ParamMarkdown(s); },
              [](const ParamMarkdown& p) {
                for (const auto& r : p.rows()) std::cout << r << "\n";
              });
  } else {
    print_all([](const char* s) { return ParamPrinter(s); },
              [](const ParamPrinter& p) {
                for (const auto& l : p.lines()) std::cout << l << "\n";
              });
  }
  return 0;
}

}  // namespace

namespace {
struct ConfigKeysArgs {
  bool markdown = false;
  template <class V>
  void visit(V& v) {
    v.field("markdown", markdown, "as a Markdown table (the README's)");
  }
};
}  // namespace

Runner add_config_keys(CLI::App& app) {
  return declared_command(app, "config-keys", ConfigKeysArgs{}, {},
                          [](const ConfigKeysArgs& a) { return run_config_keys(a.markdown); });
}

}  // namespace radstream::app
