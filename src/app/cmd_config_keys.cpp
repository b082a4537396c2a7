// radstream config-keys [--markdown]: every configuration key with its default, range and meaning, from the
// params structs' visit(), and (--markdown) which recon keys each method reads, from the methods'
// declarations (the README's tables are this command's --markdown output; a test holds them equal).
#include <iostream>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/param_reader.hpp"
#include "recon/methods.hpp"
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

// The methods' own declarations (recon/methods.hpp): where each runs, how, and which recon keys it reads.
void print_methods() {
  std::cout << "\n| recon.method | runs | under a deadline | reads |\n|---|---|---|---|\n";
  for (const MethodSpec& m : builtin_methods().all()) {
    std::string keys;
    for (const std::string& k : m.key_names()) keys += (keys.empty() ? "" : ", ") + k;
    const char* runs = !m.live ? "offline only (recon)" : "streams and recon";
    std::cout << "| " << m.name << " | " << runs << " | "
              << (m.deadline_ms ? "when its deadline key is set" : "no") << " | " << keys << " |\n";
  }
}

int run_config_keys(bool markdown) {
  if (markdown) {
    std::cout << "| key | default | values | meaning |\n|---|---|---|---|\n";
    print_all([](const char* s) { return ParamMarkdown(s); },
              [](const ParamMarkdown& p) {
                for (const auto& r : p.rows()) std::cout << r << "\n";
              });
    print_methods();
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
