// radstream keygen: a CURVE key pair for a receiver, a sender or an image subscriber (docs/security.md).
#include <string>

#include "app/commands.hpp"
#include "core/log.hpp"
#include "wire/curve.hpp"

namespace radstream::app {

Runner add_keygen(CLI::App& app) {
  struct Args {
    std::string out;
    bool overwrite = false;
  };
  auto a = std::make_shared<Args>();
  app.add_option("--out", a->out, "NAME: writes NAME.key (the key pair, mode 0600) and NAME.pub (the public key)")
      ->required();
  app.add_flag("--overwrite", a->overwrite, "replace existing NAME.key / NAME.pub");
  return [a] {
    const CurveKeys keys = generate_curve_keys();
    write_curve_key_files(keys, a->out, a->overwrite);
    log::info("keygen: {}.key (keep it secret) and {}.pub; public key {}", a->out, a->out, keys.public_key);
    return 0;
  };
}

}  // namespace radstream::app
