// The MRD server's settings (the `mrd.` keys of a run's configuration): where it listens, how many sessions,
// its timeouts, which frames a session gets and in what pixels. The server itself is a protocol adapter
// (ingest/mrd/mrd_server.hpp); its settings live here, with the rest of a run's configuration.
#pragma once
#include <string>
#include <vector>

#include "core/enum_table.hpp"

namespace radstream {

enum class MrdPixels { Int16, Float, Complex };
inline constexpr EnumTable<MrdPixels, 3> kMrdPixels{
    "MRD image pixels",
    {{{MrdPixels::Int16, "int16"}, {MrdPixels::Float, "float"}, {MrdPixels::Complex, "complex"}}}};

// Which frames a scanner session gets: every frame, in order (a scanner's database wants the whole series),
// or the newest due one when the reconstruction falls behind (a display).
enum class MrdFrames { All, Latest };
inline constexpr EnumTable<MrdFrames, 2> kMrdFrames{
    "MRD frame policy", {{{MrdFrames::All, "all"}, {MrdFrames::Latest, "latest"}}}};

struct MrdServerParams {
  std::string listen;               // tcp://HOST:PORT; "-": one session on stdin/stdout; empty: off
  int max_sessions = 0;             // 0: sized from the memory budget (max_sessions_auto)
  double message_timeout_s = 10.0;  // a message must arrive whole within this of its first byte
  double header_timeout_s = 10.0;   // a connection must send its XML header within this
  double idle_timeout_s = 30.0;     // a session with no acquisition this long is ended (0: never)
  double send_timeout_s = 10.0;     // a client that takes no bytes this long is dropped
  double drain_timeout_s = 30.0;    // after a client's close: the longest wait for the frames still due
  MrdFrames frames = MrdFrames::All;
  std::string default_config;  // serves a config name the server does not know (with a WRN); empty: refused
  int queue_images = 64;       // images waiting for a slow client; beyond, the oldest is dropped
  MrdPixels pixels = MrdPixels::Int16;
  bool partition_images = false;      // a volume as one 2D image per partition (slice set), not one 3D image
  std::string allow;                  // client addresses admitted beyond loopback (comma-separated)
  std::string config_dir = "config";  // where a config name that is not a method finds NAME.yaml
  // The pipeline's limits (stream.max_samples, stream.max_coils), set by the server: an acquisition beyond
  // them ends the session when its header is read, before any of its body is, as the ingest would refuse it.
  int max_samples = 4096;
  int max_coils = 64;

  template <class V>
  void visit(V& v) {
    v.field("listen", listen,
            "serve MRD (ISMRMRD) clients on this TCP endpoint, e.g. tcp://127.0.0.1:9002; '-': one session "
            "read from standard input, its images written to standard output (empty: off)");
    v.field("max_sessions", max_sessions, 0, 64,
            "MRD sessions served at once, each with its own pipeline (others are told: busy); 0: as many as "
            "the memory budget allows (one per GiB of free GPU memory, or per two CPU cores; 1..16)");
    v.field("message_timeout_s", message_timeout_s, 0.1, 3600.0,
            "an MRD message must arrive whole within this many seconds of its first byte");
    v.field("header_timeout_s", header_timeout_s, 0.1, 3600.0,
            "an MRD client must send its XML header within this many seconds of connecting");
    v.field("idle_timeout_s", idle_timeout_s, 0.0, 86400.0,
            "end an MRD session that sends no acquisition for this many seconds (queries and texts do not "
            "count; 0: never)");
    v.field("send_timeout_s", send_timeout_s, 0.1, 3600.0,
            "drop an MRD client that takes no image this long");
    v.field(
        "drain_timeout_s", drain_timeout_s, 0.1, 3600.0,
        "after an MRD client's close, the longest wait for the frames still due (the wait is the measured "
        "frame time times the frames left, within this)");
    v.choice("frames", frames, kMrdFrames,
             "all: every frame of an MRD session, in order (the client waits when the reconstruction is "
             "behind); latest: the newest due frame wins");
    v.field(
        "default_config", default_config,
        "the config served (with a warning) when an MRD client names one the server does not know; empty: "
        "such a client is refused");
    v.field("queue_images", queue_images, 1, 100000,
            "images queued for a slow MRD client (the oldest dropped)");
    v.choice("pixels", pixels, kMrdPixels,
             "MRD images as int16 magnitudes (12 stored bits), float magnitudes, or complex (image_type 5: "
             "needs cg-sense, nlinv or coil_combine sense)");
    v.field("partition_images", partition_images,
            "a stack of stars' volume as one 2D image per partition (slice = the partition, positioned along "
            "slice_dir), as scanners store 3D data, instead of one 3D image");
    v.field("allow", allow, "MRD client addresses admitted on a non-loopback endpoint (comma-separated)");
    v.field("config_dir", config_dir, "folder of the YAML files an MRD config name may select");
  }
  // Throws ConfigError naming the bad value: a non-local endpoint without `insecure` and an allow-list.
  void validate(bool insecure) const;
  // One session over the program's standard input and output (Gadgetron's --from_stream convention).
  bool pipe() const { return listen == "-"; }
};

// max_sessions 0: one session per GiB of free memory on the GPU (cuda), else one per two CPU cores; 1..16.
int max_sessions_auto(bool cuda);

// The client addresses of an allow-list ("a, b,c"), blanks trimmed.
std::vector<std::string> mrd_allow_list(const std::string& allow);

}  // namespace radstream
