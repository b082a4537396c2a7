// radstream replay FILE.h5: streams a recording back through the wire protocol (wire/replay.hpp).
#include <memory>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "app/interrupt.hpp"
#include "wire/replay.hpp"

namespace radstream::app {

Runner add_replay(CLI::App& app) {
  auto o = std::make_shared<DeclaredOptions>();
  o->add(app, "replay", ReplayControl{}, {{{"file", "file"}}, {}, {"file"}});
  o->add(app, "sender", SenderParams{});
  return [o] {
    ReplayControl control;
    SenderParams sender;
    o->apply("replay", control);
    o->apply("sender", sender);
    InterruptWatch interrupt;
    if (!control.mrd.empty()) return replay_to_mrd_server(control, [&] { return interrupt.requested(); });
    return replay_recording(control, sender, [&] { return interrupt.requested(); });
  };
}

}  // namespace radstream::app
