// A stack-of-stars stream on the GPU: the window sorted, turned along kz and split into z positions on the
// device (VolumeAssemblerCuda) equals its CPU twin (VolumeAssembler), and a volume stream through the GPU's
// spoke ring makes the CPU's volumes. Skips without a GPU; RADSTREAM_REQUIRE_GPU=1 makes that a failure.

#include <utility>

#include "gpu/device_memory.hpp"
#include "gpu/gpu_test_util.hpp"
#include "ingest/protocols.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "recon/volume_assembly_cuda.hpp"
#include "recon/volume_chain.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/sender.hpp"

using namespace radstream;
using namespace std::chrono_literals;

// The GPU's assembly against the CPU twin, for an even and an odd depth, a window that lost a spoke (its
// missing spoke counted, zeros in its place), and the trajectory of each slot.
TEST(VolumeStreamCuda, TheGpuAssemblyEqualsItsCpuTwin) {
  RADSTREAM_REQUIRE_GPU();
  for (int P : {8, 5}) {
    const Simulator sim(test::stack_sim(32, P, 3, 30));
    const int W = 12;
    auto spokes = sim.spokes(0, (W + 1) * P);
    spokes.erase(spokes.begin() + 3 * P + 1);  // one spoke lost
    const std::vector<Spoke> window(spokes.end() - W * P, spokes.end());
    const Frame raw = frame_from_spokes(sim.header(), window);
    const Geometry plane = sim.header().geometry(W);
    VolumeAssembler cpu;
    cpu.configure(plane, P);
    std::vector<Frame> want;
    const auto cpu_counts = cpu.assemble(raw, want);
    VolumeAssemblerCuda gpu(plane, P, 0);
    std::vector<SpokeHeader> heads;
    VolumeAssembler::Counts counts;
    const int R = raw.geometry.spokes;
    ASSERT_TRUE(gpu.assemble(
        R,
        [&](cfloat* d_data, float* d_traj, gpu::StreamRef stream, std::vector<SpokeHeader>& h) {
          gpu::copy_to_device(d_data, raw.data.data(), raw.data.size() * sizeof(cfloat), stream);
          gpu::copy_to_device(d_traj, raw.traj.data(), raw.traj.size() * sizeof(float), stream);
          for (const auto& s : window) h.push_back(s.header);
          return true;
        },
        heads, counts));
    EXPECT_EQ(counts.missing, cpu_counts.missing);
    EXPECT_EQ(counts.missing, 1);
    EXPECT_EQ(counts.first_step, cpu_counts.first_step);
    EXPECT_EQ(counts.last_step, cpu_counts.last_step);
    for (int z = 0; z < P; ++z) {
      Frame got(plane);
      gpu.download(z, got);
      const std::vector<cfloat> a(got.data.begin(), got.data.end()),
          b(want[std::size_t(z)].data.begin(), want[std::size_t(z)].data.end());
      EXPECT_LT(test::rel_error(a, b), 1e-5) << "P " << P << ", z " << z;
      EXPECT_TRUE(std::equal(got.traj.begin(), got.traj.end(), want[std::size_t(z)].traj.begin()))
          << "P " << P << ", z " << z;
    }
  }
}

// The z positions as one batch on the GPU (one chain over P images of C coils: every launch over P x C
// channels, the coil combination image by image) against a loop of 2D chains on the GPU, one z position at a
// time: cuFFT with the rss stage, the custom engine's fused tail (its coil groups never spanning two images),
// the custom engine unfused, and fbp; and the batch against the CPU's batch.
TEST(VolumeStreamCuda, TheBatchedZPositionsEqualALoopOf2dChains) {
  RADSTREAM_REQUIRE_GPU();
  const int P = 8, W = 40, N = 64, C = 6;
  const Simulator sim(test::stack_sim(N, P, C, 30));
  const Frame raw = frame_from_spokes(sim.header(), sim.spokes(0, W * P));
  const Geometry plane = sim.header().geometry(W);
  VolumeAssembler each;
  each.configure(plane, P);
  std::vector<Frame> frames;
  each.assemble(raw, frames);
  const Registry reg = default_registry();
  struct Case {
    const char* name;
    ReconMethod method;
    FftEngine engine;
    bool fused;
  };
  for (const Case& k : {Case{"gridding, cufft", ReconMethod::Gridding, FftEngine::Auto, true},
                        Case{"gridding, custom fused", ReconMethod::Gridding, FftEngine::Custom, true},
                        Case{"gridding, custom unfused", ReconMethod::Gridding, FftEngine::Custom, false},
                        Case{"fbp", ReconMethod::Fbp, FftEngine::Auto, true}}) {
    ReconParams rp;
    rp.method = k.method;
    rp.fft.engine = k.engine;
    rp.fft.fused = k.fused;
    VolumeChain volume(rp, Backend::Cuda, reg);
    volume.configure(plane, P);
    const View<const cfloat> v = volume.reconstruct(raw);
    ASSERT_EQ(v.size(), std::size_t(P) * N * N) << k.name;
    const std::vector<cfloat> got(v.data, v.data + v.size());
    ReconChain chain(rp, Backend::Cuda, reg);
    chain.configure(plane);
    std::vector<cfloat> loop;
    for (int z = 0; z < P; ++z) {
      const View<const cfloat> img = chain.reconstruct(frames[std::size_t(z)]);
      loop.insert(loop.end(), img.data, img.data + img.size());
    }
    const double e = test::rel_error(got, loop);
    rp.backend = BackendChoice::Cpu;
    rp.fft.engine = FftEngine::Auto;
    VolumeChain cpu(rp, Backend::Cpu, reg);
    cpu.configure(plane, P);
    const View<const cfloat> c = cpu.reconstruct(raw);
    const double ec = test::rel_error(got, std::vector<cfloat>(c.data, c.data + c.size()));
    std::printf(
        "%s: %d z positions as one batch against a loop of 2D chains on the GPU %.3g, against the "
        "CPU's batch %.3g\n",
        k.name, P, e, ec);
    EXPECT_LT(e, 1e-5) << k.name;
    EXPECT_LT(ec, 1e-4) << k.name;
  }
}

// A volume stream through the GPU's ring against the same stream on the CPU: gridding (every volume within
// 1e-4), cg-sense as one solve over the volume (its maps estimated in the stream, ESPIRiT on each backend;
// refreshed from the second volume, the GPU's from its device copy; the phantom is still, so each refresh's
// maps are the first's up to noise; warm started volume after volume; within 2e-2, the 2D chains' bound for a
// float CG on each side), and a
// stack whose partitions are turned against each other (found in the GPU's first window, then every window
// from the host through the 3D NUFFT of each backend; within 1e-4).
TEST(VolumeStreamCuda, AVolumeStreamOnTheGpuMakesTheCpusVolumes) {
  RADSTREAM_REQUIRE_GPU();
  const int P = 8;
  int port = 26530;
  for (const auto& [method, rotation] :
       {std::pair{ReconMethod::Gridding, 0.0}, {ReconMethod::CgSense, 0.0}, {ReconMethod::Gridding, 23.0}}) {
    SimParams sp = test::stack_sim(64, P, 4, 30);
    sp.partition_rotation_deg = rotation;
    const Simulator sim(sp);
    const auto spokes = sim.spokes(0, (64 + 32 * 3) * P);
    std::vector<std::vector<FrameResult>> runs;
    for (BackendChoice b : {BackendChoice::Cpu, BackendChoice::Cuda}) {
      RunConfig cfg;
      cfg.stream.endpoint = "tcp://127.0.0.1:" + std::to_string(port++);
      cfg.frames.window = 64;
      cfg.frames.stride = 32;
      cfg.frames.max_window = 64;
      cfg.frames.skip_when_behind = false;
      cfg.sinks.report_interval_s = 0;
      cfg.recon.backend = b;
      cfg.recon.method = method;
      cfg.recon.cg.maps_every =
          2;  // cg-sense: a refresh from the second volume on (the GPU's from the device)
      cfg.recon.fft.planner = FftPlanner::Estimate;
      streamtest::Rig rig(cfg, 9);
      rig.s.send_header(stream_header_to_xml(sim.header()));
      for (const Spoke& spoke : spokes) rig.s.send_spoke(spoke);
      ASSERT_TRUE(rig.p.wait_frames(4, 60s)) << rig.p.report();
      rig.p.stop();
      EXPECT_EQ(rig.p.metrics().frames_failed.load(), 0u) << rig.p.last_error();
      runs.push_back(rig.c.get());
    }
    ASSERT_EQ(runs[0].size(), 4u);
    ASSERT_EQ(runs[1].size(), 4u);
    const double bound = method == ReconMethod::Gridding ? 1e-4 : 2e-2;
    for (std::size_t v = 0; v < 4; ++v) {
      EXPECT_EQ(runs[1][v].depth, P);
      EXPECT_EQ(runs[1][v].first_spoke, runs[0][v].first_spoke);
      const double e = test::rel_error(runs[1][v].image, runs[0][v].image);
      std::printf("%s%s volume %zu: GPU against CPU %.3g\n", to_string(method).c_str(),
                  rotation != 0 ? " (rotated partitions)" : "", v, e);
      EXPECT_LT(e, bound) << to_string(method) << ", volume " << v;
    }
  }
}
