// radstream keygen: a CURVE key pair for a receiver, a sender or an image subscriber (docs/security.md).
#include <string>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/log.hpp"
#include "wire/curve.hpp"

namespace radstream::app {

namespace {
struct KeygenArgs {
  std::string out;
  bool overwrite = false;

  template <class V>
  void visit(V& v) {
    v.field("out", out, "NAME: writes NAME.key (the key pair, mode 0600) and NAME.pub (the public key)");
    v.field("overwrite", overwrite, "replace existing NAME.key / NAME.pub");
  }
};
}  // namespace

Runner add_keygen(CLI::App& app) {
  DeclaredOptions::Style style;
  style.required = {"out"};
  return declared_command(app, "keygen", KeygenArgs{}, style, [](const KeygenArgs& a) {
    const CurveKeys keys = generate_curve_keys();
    write_curve_key_files(keys, a.out, a.overwrite);
    log::info("keygen: {}.key (keep it secret) and {}.pub; public key {}", a.out, a.out, keys.public_key);
    return 0;
  });
}

}  // namespace radstream::app
