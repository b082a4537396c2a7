// Where reconstructed frames go: a Sink consumes frames on the sink thread, in order. The runtime owns a list
// of them, built from the run config (sinks: section); a sink's failure drops that frame for that sink, is
// counted (sink_dropped) and logged once, and the others go on. Spokes are recorded by the Recorder, the
// ingest's tap, before reconstruction.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "stream/frame_result.hpp"
#include "stream/metrics.hpp"
#include "wire/connection_counts.hpp"

namespace radstream {

struct SinkParams;

class Sink {
 public:
  virtual ~Sink() = default;
  virtual std::string name() const = 0;
  virtual void consume(const FrameResult& f) = 0;
};

// The sinks the run config asks for: the image publisher (ZeroMQ PUB, image messages encoded by the wire
// module) and image files. `curve_key`: the receiver's CURVE key pair file (empty: none); with it the
// publisher admits only subscribers on the allow-list; `limits` bound its subscribers' connections. Throws
// ConfigError when the publisher cannot bind.
std::vector<std::unique_ptr<Sink>> make_sinks(const SinkParams& p, zmq::context_t& ctx, Metrics& metrics,
                                              const std::string& curve_key = "",
                                              const ConnectionLimits& limits = {});

}  // namespace radstream
