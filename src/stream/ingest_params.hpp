// The settings of a stream's receiving side (the `stream:` section): the ZeroMQ endpoint and socket, and the
// limits, rings and corrections every stream's front door applies whatever its protocol.
#pragma once
#include <string>

#include "core/enum_table.hpp"
#include "core/spoke.hpp"
#include "wire/connection_guard.hpp"

namespace radstream {

enum class ReceiveSocket { Pull, Sub };
inline constexpr EnumTable<ReceiveSocket, 2> kReceiveSockets{
    "receive socket", {{{ReceiveSocket::Pull, "pull"}, {ReceiveSocket::Sub, "sub"}}}};

struct IngestParams {
  std::string endpoint = "tcp://127.0.0.1:5555";
  ReceiveSocket socket = ReceiveSocket::Pull;  // pull (lossless) | sub (a tap)
  bool bind = true;
  int rcvhwm = 4000;
  int max_samples = 4096;  // what scanners send (and far more than radial readouts need)
  int max_coils = 64;
  long accept_stream_id = 0;      // 0: follow the first stream whose header arrives
  double sender_timeout_s = 2.0;  // report a silent sender after this long
  int ring_margin = 1024;         // ring slots beyond the largest window
  int max_ring_mib = 4096;        // a stream header whose spoke ring would need more is rejected
  std::string curve_key;          // CURVE: this receiver's key pair file (radstream keygen); empty: no CURVE
  std::string curve_clients;      // CURVE: allow-list of client public keys (with curve_key)
  bool insecure = false;          // allow binding a non-local endpoint without CURVE (warned)
  int slices = 1;                 // slices (MRD idx.slice 0..slices-1) reconstructed, each on its own
  std::string gradient_delay = "off";  // off | auto | A:B:C (stream/delay_corrector.hpp)
  long gradient_delay_every = 125;     // auto: frames between two RING estimates
  ConnectionLimits connections;        // every listening socket of the receiver (wire/connection_guard.hpp)
  std::string memory_limit = "auto";  // what one stream header may make the receiver allocate (memory_budget)
  std::string memory_limit_total = "auto";  // what all streams together may hold (recon/memory_account.hpp)

  template <class V>
  void visit(V& v) {
    v.field("endpoint", endpoint, "ZeroMQ endpoint to receive on (tcp://127.0.0.1:5555)");
    v.choice("socket", socket, kReceiveSockets, "pull (lossless) or sub (a tap that may drop)");
    v.field("bind", bind, "bind the endpoint (true) or connect to it (false)");
    v.field("rcvhwm", rcvhwm, 1, 1 << 20, "receive high-water mark, messages");
    v.field("max_samples", max_samples, 2, 65535, "largest samples per spoke accepted");
    v.field("max_coils", max_coils, 1, 1024, "largest coil count accepted");
    v.field(
        "accept_stream_id", accept_stream_id, 0L, 4294967295L,
        "follow only this stream id; 0: the first stream, then the next one after it closes or falls silent");
    v.field("sender_timeout_s", sender_timeout_s, 0.05, 3600.0, "report the sender lost after this silence");
    v.field("ring_margin", ring_margin, 16, 1 << 20, "spoke ring slots beyond the largest window");
    v.field("max_ring_mib", max_ring_mib, 16, 1 << 20,
            "largest spoke ring (MiB) a stream header may ask for; a larger one is rejected, the stream in "
            "hand goes on");
    v.field("curve_key", curve_key,
            "CURVE key pair file of this receiver (radstream keygen); senders and subscribers must then "
            "authenticate");
    v.field("curve_clients", curve_clients,
            "CURVE allow-list: the public keys of the senders and subscribers admitted");
    v.field("insecure", insecure,
            "allow binding a non-local (or wildcard) endpoint without CURVE: any host could inject spokes");
    v.field(
        "slices", slices, 1, kMaxSlices,
        "slices (MRD idx.slice 0..N-1) of the stream, each with its own window, frames and worker; a spoke "
        "of another slice is rejected (slice_range)");
    v.field("gradient_delay", gradient_delay,
            "gradient-delay correction of every spoke's trajectory: off, auto (RING on the latest 64 spokes, "
            "again every gradient_delay_every frames) or A:B:C (BART's traj -q x:y:xy, in samples)");
    v.field("gradient_delay_every", gradient_delay_every, 1L, 1L << 40,
            "auto gradient delays: frames between two RING estimates (a frame every stride spokes)");
    v.field(
        "memory_limit", memory_limit,
        "memory one stream header may make the receiver allocate (spoke rings, grids, maps, solver work), "
        "checked before anything is allocated: auto (a quarter of the RAM; 90 % of the GPU's free memory) or "
        "a "
        "size (8G, 512M)");
    v.field(
        "memory_limit_total", memory_limit_total,
        "memory all streams together (the ZeroMQ stream and every MRD session) may hold; a header that "
        "would go past it is refused (an MRD client hears why in an ERR text): auto (a quarter of the RAM; "
        "90 % of the GPU's free memory) or a size (16G)");
    v.field("max_connections", connections.max_connections, 1, 1 << 20,
            "connections each listening socket (spokes, published images) keeps open at once; more are shut "
            "down at once (lowered to what the descriptor limit allows)");
    v.field("max_connections_per_address", connections.max_per_address, 1, 1 << 20,
            "connections one peer address may keep open on each listening socket");
    v.field("handshake_timeout_s", connections.handshake_timeout_s, 0.1, 3600.0,
            "a connection that has not completed its ZeroMQ/CURVE handshake by then is dropped");
  }
  void validate() const;
};

}  // namespace radstream
