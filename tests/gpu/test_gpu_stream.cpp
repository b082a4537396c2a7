// The streaming path on the GPU: spokes uploaded into the device ring as they arrive, frames gathered on the
// device and reconstructed by the CUDA chain (CUDA graph, custom fused FFT), compared with the offline CPU
// reconstruction of the same spokes. Skips without a GPU; RADSTREAM_REQUIRE_GPU=1 makes that a failure.
#include <mutex>
#include <thread>

#include "gpu/gpu_test_util.hpp"
#include "ingest/protocols.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/sender.hpp"

using namespace radstream;
using namespace radstream::gputest;
using namespace std::chrono_literals;

TEST(GpuStream, DeviceRingFramesMatchTheOfflineCpuRecon) {
  RADSTREAM_REQUIRE_GPU();
  for (const char* engine : {"cufft", "custom"}) {
    RunConfig cfg;
    cfg.stream.endpoint = "tcp://127.0.0.1:26520";
    cfg.frames.window = 64;
    cfg.frames.stride = 16;
    cfg.frames.max_window = 64;
    cfg.frames.skip_when_behind = false;
    cfg.stream.ring_margin = 32;  // a small ring, so that windows wrap around it
    cfg.sinks.report_interval_s = 0;
    cfg.recon.backend = BackendChoice::Cuda;
    cfg.recon.fft.engine = parse_fft_engine(engine);
    cfg.recon.fft.planner = FftPlanner::Estimate;
    const Registry reg = default_registry();
    std::vector<FrameResult> frames;
    std::mutex m;
    {
      StreamRuntime p(cfg, reg, make_protocol_servers);
      ASSERT_EQ(p.backend(), Backend::Cuda);
      p.on_frame([&](const FrameResult& f) {
        std::lock_guard lock(m);
        frames.push_back(f);
      });
      p.start();
      SimParams sp;
      sp.matrix = 64;
      sp.coils = 8;
      sp.snr = 30;
      sp.motion = true;
      const Simulator sim(sp);
      zmq::context_t ctx(1);
      SenderParams sps;
      sps.endpoint = cfg.stream.endpoint;
      Sender s(ctx, sps, 5);
      s.send_header(stream_header_to_xml(sim.header()));
      for (const Spoke& spoke : sim.spokes(0, 256)) {
        s.send_spoke(spoke);
        std::this_thread::sleep_for(1ms);
      }
      s.close();
      const auto end = std::chrono::steady_clock::now() + 20s;
      while (p.metrics().frames < 13 && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(10ms);
      p.stop();
      EXPECT_EQ(p.metrics().frames.load(), 13u);  // (256 - 64) / 16 + 1
      EXPECT_EQ(p.metrics().frames_failed.load(), 0u);
      // Offline on the CPU.
      ReconParams cpu = cfg.recon;
      cpu.backend = BackendChoice::Cpu;
      cpu.fft.engine = FftEngine::Auto;
      ReconChain offline(cpu, Backend::Cpu, reg);
      offline.configure(sim.header().geometry(64));
      const auto spokes = sim.spokes(0, 256);
      std::lock_guard lock(m);
      for (const auto& f : frames) {
        const Frame ref = frame_from_spokes(sim.header(), std::span(spokes).subspan(f.first_spoke, 64));
        const auto img = offline.reconstruct(ref);
        const double e = rel_error(f.image, std::vector<cfloat>(img.data, img.data + img.size()));
        std::printf("%s frame %llu (spokes %llu..%llu): GPU stream vs CPU offline %.3g\n", engine,
                    (unsigned long long)f.number, (unsigned long long)f.first_spoke,
                    (unsigned long long)f.last_spoke, e);
        EXPECT_LE(e, 1e-5);
      }
    }
    frames.clear();
  }
}
