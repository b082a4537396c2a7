#include "ingest/zmq/zmq_server.hpp"

#include "stream/stream_runtime.hpp"

namespace radstream {

ZmqServer::ZmqServer(StreamRuntime& rt)
    : ingest_(rt.zmq_context(), rt.config().stream, rt.metrics(), rt.own_intake()) {}

}  // namespace radstream
