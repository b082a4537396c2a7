// A benchmark case (one file of config/bench/*.yaml: a `bench:` section and an optional `recon:`), and the
// streaming cases' runners (bench_stream.cpp).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "recon/recon_params.hpp"
#include "recon/registry.hpp"
#include "stream/run_config.hpp"
#include "wire/sim_streamer.hpp"

namespace radstream::app {

enum class BenchKind { Chain, FftEngines, Ingest, Live, MrdDecode, MrdLive, MrdSessions, Nufft, NufftSweep };
inline constexpr EnumTable<BenchKind, 9> kBenchKinds{"bench kind",
                                                     {{{BenchKind::Chain, "chain"},
                                                       {BenchKind::FftEngines, "fft-engines"},
                                                       {BenchKind::Ingest, "ingest"},
                                                       {BenchKind::Live, "live"},
                                                       {BenchKind::MrdDecode, "mrd-decode"},
                                                       {BenchKind::MrdLive, "mrd-live"},
                                                       {BenchKind::MrdSessions, "mrd-sessions"},
                                                       {BenchKind::Nufft, "nufft"},
                                                       {BenchKind::NufftSweep, "nufft-sweep"}}}};

struct BenchCase {
  std::string name, what;
  int spokes = 256, samples = 512, coils = 32, matrix = 256;
  Backend backend = Backend::Cuda;
  BenchKind kind = BenchKind::Chain;
  double rate_hz = 1000;              // live: spokes per second
  double duration_s = 10;             // live: seconds of stream
  int stride = 16;                    // live: a new frame every S spokes (the window is `spokes`)
  long total_spokes = 50000;          // ingest: spokes sent as fast as possible
  int port = 56300;                   // tcp loopback port of the streaming cases
  int slices = 1;                     // live: slices interleaved in the stream, each at rate_hz
  int partitions = 1;                 // live: a stack of stars' kz partitions (spokes, stride: per partition)
  double partition_rotation_deg = 0;  // live: partition p turned in plane by p x this (the 3D NUFFT route)
  int sessions = 8;                   // mrd-sessions: MRD clients at once, each at rate_hz
  bool kill_one = false;              // mrd-sessions: the first client vanishes halfway
  bool moving = false;      // chain: each frame the simulator's next spokes (else the same frame each time)
  std::string gpus;         // live: placement.gpus for the slices' workers (empty: the current GPU)
  long points = 1000000;    // nufft-sweep: random points of the random geometries
  int random_matrix = 512;  // nufft-sweep: random-2d onto random_matrix^2
  int volume = 128;         // nufft-sweep: random-3d onto volume^3
  std::string geometries = "radial,random-2d,random-3d";  // nufft-sweep
  std::string target;     // pass/fail clauses (bench_target.hpp); empty: none (R7: see the plots)
  bool long_run = false;  // minutes (e.g. BART beside radstream on the CPU): run only when named
  ReconParams recon;

  template <class V>
  void visit(V& v) {
    v.field("name", name, "case name, e.g. R1");
    v.field("what", what, "one line describing the case");
    v.field("long_run", long_run,
            "a case that takes minutes: left out of a bench run that names no case (with a line saying how "
            "to run "
            "it)");
    v.field("spokes", spokes, 1, 1 << 16, "spokes per frame");
    v.field("moving", moving,
            "chain: each frame reconstructs the simulator's next spokes (golden angle), as a stream would; "
            "false: the same frame every time");
    v.field("samples", samples, 2, 65536, "samples per spoke");
    v.field("coils", coils, 1, 64, "coils");
    v.field("matrix", matrix, 8, 4096, "image matrix N");
    v.choice("backend", backend, kBackends, "where the case runs");
    v.choice("kind", kind, kBenchKinds,
             "chain (the whole reconstruction) | fft-engines (R3) | ingest (R6: receive only) | live (R5: "
             "simulator -> tcp -> pipeline) | mrd-decode (MRD1: the MRD codec alone) | mrd-live (MRD2: R5 "
             "over --mrd-listen) | nufft (F1: the NUFFT operator both ways on the case's frame) | "
             "nufft-sweep (time against accuracy over kernel widths and oversampling)");
    v.field("rate_hz", rate_hz, 1.0, 1e6, "live: spokes per second");
    v.field("duration_s", duration_s, 0.5, 3600.0, "live: seconds of stream");
    v.field("stride", stride, 1, 1 << 16, "live: a new frame every S spokes");
    v.field("total_spokes", total_spokes, 1L, 100000000L, "ingest: spokes sent");
    v.field("port", port, 1024, 65535, "tcp loopback port");
    v.field("slices", slices, 1, 16, "live: slices interleaved in the stream, each at rate_hz (M2)");
    v.field("partitions", partitions, 1, 1024,
            "live: a stack of stars of this many kz partitions (frames are volumes; spokes and stride count "
            "each partition's; rate_hz counts every partition's spokes)");
    v.field(
        "partition_rotation_deg", partition_rotation_deg, -360.0, 360.0,
        "live: a stack of stars whose partition p is turned in plane by p x this many degrees (its volumes "
        "go through the 3D NUFFT)");
    v.field("sessions", sessions, 1, 64, "mrd-sessions: MRD clients streaming at once, each at rate_hz");
    v.field("kill_one", kill_one,
            "mrd-sessions: the first client vanishes halfway (the others must not notice)");
    v.field("gpus", gpus, "live: GPUs for the slices' workers, e.g. 0,1 (empty: the current GPU)");
    v.field("points", points, 1L, 100000000L, "nufft-sweep: points of the random geometries");
    v.field("random_matrix", random_matrix, 8, 4096, "nufft-sweep: random-2d image extent");
    v.field("volume", volume, 4, 1024, "nufft-sweep: random-3d volume extent");
    v.field("geometries", geometries, "nufft-sweep: comma list of radial, random-2d, random-3d");
    v.field("target", target,
            "pass/fail: 'JSON-pointer <= number' clauses joined by ';', e.g. '/frame_ms/median <= 3'");
  }
};

// The run configuration of the live cases: the case's window, stride and reconstruction on tcp loopback.
RunConfig live_run_config(const BenchCase& c);
// The simulator of the case's shape (matrix, samples, coils, slices, rate; SNR 50, moving phantom).
SimParams bench_sim_params(const BenchCase& c);
// The case's simulated scanner over ZeroMQ to the case's port: a pool of `pool` precomputed spokes of the
// case's shape, sent cyclically at rate_hz (or as fast as it can: unpaced).
std::unique_ptr<SimStreamer> bench_streamer(const BenchCase& c, int pool, long spokes, bool unpaced);
// R6: a sender thread pushes total_spokes precomputed spokes as fast as it can over tcp loopback into the
// ingest alone (no reconstruction); JSON with spokes/s, GB/s and the loss.
nlohmann::ordered_json ingest_case(const BenchCase& c);
// R5: the simulator at rate_hz over tcp loopback into the whole pipeline (window `spokes`, frame every
// `stride`); JSON with the latency percentiles (last spoke acquired/arrived -> image ready) and the stages.
nlohmann::ordered_json live_case(const BenchCase& c, const Registry& registry);
// MRD1: total_spokes MRD acquisitions of coils x samples decoded from memory on one core (bench_mrd.cpp).
nlohmann::ordered_json mrd_decode_case(const BenchCase& c);
// MRD2: like R5, but one MRD client streams over TCP to --mrd-listen and takes every image back; the last
// spoke's arrival -> image sent against -> image ready in the same run (bench_mrd.cpp).
nlohmann::ordered_json mrd_live_case(const BenchCase& c, const Registry& registry);
// S1/S2: `sessions` MRD clients at once, each streaming its own data at rate_hz and taking every image back,
// against one client alone in the same run; each client's last spoke sent -> image received percentiles
// (bench_mrd_sessions.cpp).
nlohmann::ordered_json mrd_sessions_case(const BenchCase& c, const Registry& registry);

}  // namespace radstream::app
