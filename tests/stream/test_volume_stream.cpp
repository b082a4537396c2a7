// A stack-of-stars stream: the simulator's volumetric phantom (each in-plane angle in every kz partition),
// its partition index carried by the wire and MRD (idx.kspace_encode_step_2), a stream whose frames are
// volumes made by the inverse DFT along kz and one 2D reconstruction per z position, and the same volumes as
// the offline route (recon's BART layout) makes from the same spokes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "display/tip_finder.hpp"
#include "ingest/protocols.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "recon/memory_budget.hpp"
#include "recon/offline_volume.hpp"
#include "recon/rotated_stack.hpp"
#include "recon/volume_chain.hpp"
#include "sim/phantom3d.hpp"
#include "sim/simulator.hpp"
#include "sim/stack_phantom.hpp"
#include "stream/mrd_test_client.hpp"
#include "stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/replay.hpp"

using namespace radstream;
using namespace radstream::streamtest;

namespace {

// The stream's spokes [first, first + count) as one raw window frame (what the ring hands a volume worker).
Frame raw_window(const Simulator& sim, std::uint64_t first, int count) {
  return frame_from_spokes(sim.header(), sim.spokes(first, count));
}

ReconParams cpu_gridding() {
  ReconParams rp;
  rp.backend = BackendChoice::Cpu;
  rp.fft.planner = FftPlanner::Estimate;
  rp.threads = 1;
  return rp;
}

// The spokes of in-plane steps [0, J) in BART's stack-of-stars layout: traj [3 S J*P] (in-plane +-N/2, kz on
// the partition grid), k-space [1 S J*P C], spokes in arrival order.
std::pair<CflArray, CflArray> bart_layout(const Simulator& sim, int J) {
  const int P = sim.params().partitions, S = sim.samples(), C = sim.params().coils, N = sim.params().matrix;
  const auto spokes = sim.spokes(0, J * P);
  CflArray t{{3, S, long(spokes.size())}, {}}, k{{1, S, long(spokes.size()), C}, {}};
  t.data.resize(std::size_t(3) * S * spokes.size());
  k.data.resize(std::size_t(S) * spokes.size() * C);
  for (std::size_t j = 0; j < spokes.size(); ++j) {
    const Spoke& s = spokes[j];
    for (int n = 0; n < S; ++n) {
      t.data[3 * (j * S + n)] = cfloat(s.traj[2 * n] * float(N), 0.f);
      t.data[3 * (j * S + n) + 1] = cfloat(s.traj[2 * n + 1] * float(N), 0.f);
      t.data[3 * (j * S + n) + 2] = cfloat(float(int(s.header.partition) - P / 2), 0.f);
      for (int c = 0; c < C; ++c)
        k.data[(std::size_t(c) * spokes.size() + j) * S + n] = s.data[std::size_t(c) * S + n];
    }
  }
  return {t, k};
}

std::vector<float> magnitudes(const std::vector<cfloat>& v) {
  std::vector<float> m(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) m[i] = std::abs(v[i]);
  return m;
}

}  // namespace

// The assembler sorts a window of spokes into steps and partitions and takes the inverse DFT along kz: each z
// position's data equal the direct sum in double, x(z) = sum_p y(p) e^{2 pi i (p - P/2)(z - P/2) / P} /
// sqrt(P), for an even and an odd depth, partitions centre-out; a spoke that never came counts as zero and is
// counted; partitions at different in-plane angles are refused, named.
TEST(StackStream, TheAssemblerIsTheInverseDftAlongKzOfEachStep) {
  for (int P : {6, 5}) {
    const Simulator sim(test::stack_sim(16, P, 2));
    const int W = 5, S = sim.samples(), C = 2;
    Frame raw = raw_window(sim, 0, W * P);
    VolumeAssembler a;
    a.configure(sim.header().geometry(W), P);
    std::vector<Frame> out;
    auto counts = a.assemble(raw, out);
    EXPECT_EQ(counts.missing, 0);
    EXPECT_EQ(counts.first_step, 0u);
    EXPECT_EQ(counts.last_step, std::uint64_t(W - 1));
    ASSERT_EQ(int(out.size()), P);
    double worst = 0, peak = 0;
    for (int z = 0; z < P; ++z)
      for (int c = 0; c < C; ++c)
        for (int j = 0; j < W; ++j)
          for (int s = 0; s < S; ++s) {
            std::complex<double> sum = 0;
            for (int r = 0; r < W * P; ++r) {
              if (raw.spoke_index[std::size_t(r)] != std::uint64_t(j)) continue;
              const int p = raw.partition[std::size_t(r)];
              const double ph = 2 * std::numbers::pi * double((p - P / 2) * (z - P / 2)) / P;
              sum +=
                  std::complex<double>(raw.data[(std::size_t(c) * W * P + r) * S + s]) * std::polar(1.0, ph);
            }
            sum /= std::sqrt(double(P));
            const auto got = std::complex<double>(out[std::size_t(z)].data[(std::size_t(c) * W + j) * S + s]);
            worst = std::max(worst, std::abs(got - sum));
            peak = std::max(peak, std::abs(sum));
          }
    EXPECT_LT(worst / peak, 1e-5) << "P = " << P;
    // The trajectory is the step's.
    EXPECT_EQ(out[1].traj[2 * S * 3 + 7], raw.traj[2 * S * (3 * P) + 7]);

    // One spoke lost: the window then reaches one step further back, the volume keeps the W newest steps.
    const auto spokes = sim.spokes(0, (W + 1) * P);
    std::vector<Spoke> lost(spokes.begin() + 1, spokes.end());
    lost.erase(lost.begin() + 2 * P);  // step 2's first partition
    Frame gap = frame_from_spokes(sim.header(), std::span(lost).last(std::size_t(W * P)));
    counts = a.assemble(gap, out);
    EXPECT_EQ(counts.first_step, 1u);
    EXPECT_EQ(counts.last_step, std::uint64_t(W));
    EXPECT_EQ(counts.missing, 1);

    // A partition turned in plane: refused, naming the spoke.
    for (int n = 0; n < S; ++n)
      std::swap(raw.traj[2 * (std::size_t(P) * S + n)], raw.traj[2 * (std::size_t(P) * S + n) + 1]);
    try {
      a.assemble(raw, out);
      ADD_FAILURE() << "a rotated partition was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("spoke 1 of partition"), std::string::npos) << e.what();
    }
  }
}

// Gridding and fbp (rss) take a volume's z positions as one batch: one chain over P images of C coils
// (Geometry::images), every stage's work one pass over P x C channels. The batch equals a loop of 2D
// reconstructions, one chain per z position, on the assembler's per-z frames; the batched frame is those
// frames' data side by side; a coil combination by maps refuses several images and keeps the loop.
TEST(StackStream, TheBatchedZPositionsEqualALoopOf2dReconstructions) {
  const int P = 5, W = 24, N = 32, C = 3;
  const Simulator sim(test::stack_sim(N, P, C));
  const Frame raw = raw_window(sim, 0, W * P);
  const Geometry plane = sim.header().geometry(W);
  VolumeAssembler each, one;
  each.configure(plane, P);
  one.configure(plane, P, true);
  std::vector<Frame> frames, batch;
  each.assemble(raw, frames);
  one.assemble(raw, batch);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].geometry.images, P);
  EXPECT_EQ(batch[0].geometry.coils, P * C);
  const std::size_t block = frames[0].data.size();
  for (int z = 0; z < P; ++z)
    ASSERT_TRUE(std::equal(frames[std::size_t(z)].data.begin(), frames[std::size_t(z)].data.end(),
                           batch[0].data.begin() + long(std::size_t(z) * block)))
        << "z position " << z;
  EXPECT_TRUE(std::equal(frames[0].traj.begin(), frames[0].traj.end(), batch[0].traj.begin()));

  const Registry reg = default_registry();
  for (const auto method : {ReconMethod::Gridding, ReconMethod::Fbp}) {
    ReconParams rp = cpu_gridding();
    rp.method = method;
    ASSERT_TRUE(batches_partitions(rp));
    VolumeChain volume(rp, Backend::Cpu, reg);
    volume.configure(plane, P);
    const View<const cfloat> v = volume.reconstruct(raw);
    ASSERT_EQ(v.size(), std::size_t(P) * N * N);
    const std::vector<cfloat> got(v.data, v.data + v.size());
    std::vector<cfloat> loop;
    ReconChain chain(rp, Backend::Cpu, reg);
    chain.configure(plane);
    for (int z = 0; z < P; ++z) {
      chain.reset_state();
      const View<const cfloat> img = chain.reconstruct(frames[std::size_t(z)]);
      loop.insert(loop.end(), img.data, img.data + img.size());
    }
    const double e = test::rel_error(got, loop);
    std::printf("%s: %d z positions as one batch against a loop of 2D chains: %.3g\n",
                to_string(method).c_str(), P, e);
    EXPECT_LT(e, 1e-6) << to_string(method);
  }

  ReconParams rp = cpu_gridding();
  rp.combine.method = CoilCombineMethod::Sense;
  EXPECT_FALSE(batches_partitions(rp));
  ReconChain maps_chain(rp, Backend::Cpu, reg);
  try {
    maps_chain.configure(batched_geometry(plane, P));
    ADD_FAILURE() << "a combination by maps took several images";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("5 images (use rss)"), std::string::npos) << e.what();
  }
}

// The simulator's volumetric phantom through the volume route: the moving tip (its path slow here) is found
// in 3D within 2 voxels of where the simulator put it, and the volume has the phantom's outline (the centre
// z position's object against its background).
TEST(StackStream, ASimulatedStackOfStarsShowsItsTipInThreeDimensions) {
  SimParams sp = test::stack_sim(64, 16, 4);
  sp.motion = true;
  sp.motion_period_s = 3600;
  sp.snr = 40;
  const Simulator sim(sp);
  const int P = 16, N = 64, W = 96;
  const Registry registry = default_registry();  // the chain keeps a reference
  VolumeChain vc(cpu_gridding(), Backend::Cpu, registry);
  vc.configure(sim.header().geometry(W), P);
  const auto vol = vc.reconstruct(raw_window(sim, 0, W * P));
  const std::vector<float> mag = magnitudes(std::vector<cfloat>(vol.data, vol.data + vol.size()));
  const auto tip = display::find_tip_3d(mag, N, P);
  const auto at = sim.stack()->tip_at(0.5 * W * P / sp.rate_hz);
  const double ex = (at[0] + 1) * N / 2, ey = (at[1] + 1) * N / 2, ez = (at[2] + 1) * P / 2;
  std::printf("tip found at (%.2f, %.2f, %.2f), put at (%.2f, %.2f, %.2f); contrast %.3g (threshold %.3g)\n",
              tip.x, tip.y, tip.z, ex, ey, ez, tip.contrast, tip.threshold);
  EXPECT_TRUE(tip.found);
  EXPECT_LT(std::abs(tip.x - ex), 2.0);
  EXPECT_LT(std::abs(tip.y - ey), 2.0);
  EXPECT_LT(std::abs(tip.z - ez), 2.0);
  // The centre z position: the brain (0.2 after the -0.8 ellipsoid, at y = 0.625) against the corner
  // outside the skull (0, with the noise and the streaks of 96 spokes).
  const std::size_t plane = std::size_t(N) * N, mid = std::size_t(P / 2) * plane;
  const float inside = mag[mid + std::size_t(52) * N + N / 2], outside = mag[mid + 2 * N + 2];
  EXPECT_NEAR(inside, 0.2f, 0.05f);
  EXPECT_GT(inside, 4 * outside) << inside << " vs " << outside;
}

// The stream header carries the partitions (encodingLimits.kspace_encoding_step_2, the encoded space's z);
// the wire carries each spoke's partition (idx.kspace_encode_step_2) both ways, as the recording does.
TEST(StackStream, ThePartitionsTravelInTheHeaderAndEachSpoke) {
  const Simulator sim(test::stack_sim(16, 12, 2));
  const StreamHeader h = stream_header_from_xml(stream_header_to_xml(sim.header()), "test");
  EXPECT_EQ(h.partitions, 12);
  const Spoke s = sim.spoke(5);  // centre-out: 6, 7, 5, 8, 4, 9, ...
  EXPECT_EQ(s.header.partition, 9);
  EXPECT_EQ(s.header.spoke_index, 0u);
  const auto parts =
      wire::encode_spoke({.type = std::uint16_t(wire::MsgType::Spoke), .sequence = 1, .stream_id = 7}, s);
  std::vector<std::span<const std::byte>> views;
  for (const auto& p : parts) views.emplace_back(p);
  const auto d = wire::decode(views, wire::Limits{});
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(d.msg.head.partition, 9);
  test::TempDir dir;
  {
    MrdWriter w(dir / "stack.h5", sim.header());
    for (const auto& sp : sim.spokes(0, 24)) w.append(sp);
  }
  const MrdRecording rec = read_mrd(dir / "stack.h5");
  EXPECT_EQ(rec.header.partitions, 12);
  ASSERT_EQ(rec.spokes.size(), 24u);
  for (std::size_t i = 0; i < rec.spokes.size(); ++i) {
    EXPECT_EQ(rec.spokes[i].header.partition, sim.place(i).partition) << i;
    EXPECT_EQ(rec.spokes[i].header.spoke_index, i / 12) << i;
  }
}

// A stack of stars over ZeroMQ: every frame is a volume [P][N][N] equal to what the offline route (recon's
// BART layout: the inverse DFT along kz, one 2D reconstruction per z position) makes of the same window's
// spokes; a spoke of a partition the header does not declare is refused and counted (partition_range); the
// recording keeps every spoke's partition and replays into the same volumes.
TEST(StackStream, AVolumeStreamMakesTheVolumesOfTheOfflineRoute) {
  const int P = 4, W = 32, N = 32;
  const Simulator sim(test::stack_sim(N, P, 2));
  test::TempDir dir;
  RunConfig cfg = small_config(27460, false);  // window 32, stride 16 (in-plane spokes)
  cfg.sinks.record = dir / "stack.h5";
  const int volumes = 3, count = (W + 16 * (volumes - 1)) * P;
  Rig rig(cfg, 77);
  rig.s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& s : sim.spokes(0, count)) rig.s.send_spoke(s.header, s);
  Spoke stray = sim.spoke(0);
  stray.header.partition = P;
  rig.s.send_spoke(stray.header, stray);
  ASSERT_TRUE(rig.p.wait_frames(volumes, 60s)) << rig.p.report();
  ASSERT_TRUE(eventually([&] { return rig.p.metrics().rejected_total() == 1; })) << rig.p.report();
  rig.p.stop();
  const auto frames = rig.c.get();
  ASSERT_EQ(frames.size(), std::size_t(volumes));
  EXPECT_EQ(rig.p.metrics().rejected[std::size_t(wire::Reject::PartitionRange)].load(), 1u);
  EXPECT_EQ(rig.p.metrics().volume_spokes_missing.load(), 0u);
  const FrameResult& f = frames[0];
  EXPECT_EQ(f.depth, P);
  EXPECT_EQ(f.matrix, N);
  EXPECT_EQ(f.window, W);
  EXPECT_EQ(f.first_spoke, 0u);
  EXPECT_EQ(f.last_spoke, std::uint64_t(W - 1));
  EXPECT_EQ(frames[2].first_spoke, 32u);
  ASSERT_EQ(f.image.size(), std::size_t(P) * N * N);

  const auto [t, k] = bart_layout(sim, W);
  const auto layout = stack_of_stars_layout(t, -1, "test");
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->partitions, P);
  const OfflineVolume off =
      reconstruct_volume(stack_frames(*layout, t, k, N, "test"), cpu_gridding(), "", false);
  const double e = test::rel_error(f.image, off.image);
  std::printf("stream volume against the offline route: %.3g\n", e);
  EXPECT_LT(e, 1e-5);
  // The z positions differ (a misplaced partition could not pass): the centre against the edge of the slab.
  const std::size_t plane = std::size_t(N) * N;
  const std::vector<cfloat> z0(f.image.begin(), f.image.begin() + long(plane)),
      zc(f.image.begin() + long(plane * (P / 2)), f.image.begin() + long(plane * (P / 2 + 1)));
  EXPECT_GT(test::rel_error(z0, zc), 0.2);

  const MrdRecording rec = read_mrd(dir / "stack.h5");
  EXPECT_EQ(rec.header.partitions, P);
  ASSERT_GE(rec.spokes.size(), std::size_t(count));
  for (std::size_t i = 0; i < std::size_t(count); ++i)
    ASSERT_EQ(rec.spokes[i].header.partition, sim.place(i).partition) << "recorded spoke " << i;

  // The recording replayed (radstream replay) makes the same volumes.
  RunConfig again = small_config(27461, false);
  Rig replayed(again, 78);
  ReplayControl control;
  control.file = dir / "stack.h5";
  control.speed = "max";
  control.wait_s = 5;
  ASSERT_EQ(replay_recording(control, Rig::to(again.stream.endpoint), [] { return false; }), 0);
  ASSERT_TRUE(replayed.p.wait_frames(volumes, 60s)) << replayed.p.report();
  replayed.p.stop();
  const auto back = replayed.c.get();
  ASSERT_EQ(back.size(), std::size_t(volumes));
  for (int v = 0; v < volumes; ++v) {
    EXPECT_EQ(back[std::size_t(v)].depth, P);
    EXPECT_TRUE(back[std::size_t(v)].image == frames[std::size_t(v)].image) << "volume " << v << " differs";
  }
}

// A stack of stars from an MRD client (the partition in idx.kspace_encode_step_2, the partitions in the
// header's encoding limits): every volume comes back as one 3D image [N N P] (matrix_size z = P) equal to the
// offline route's volume of its window.
namespace {

// A stack-of-stars MRD session's images (two volumes of P = 4), and the offline route's volume of the first.
struct MrdVolumes {
  mrdtest::Replies r;
  OfflineVolume off;
  std::uint64_t rejected = 0;
};

constexpr float kCentre[3] = {10.f, -5.f, 3.f}, kSliceDir[3] = {0.f, 0.6f, 0.8f};

MrdVolumes mrd_volumes(int port, bool partition_images, int P, int W, int N) {
  const Simulator sim(test::stack_sim(N, P, 2));
  const Registry reg = default_registry();
  RunConfig cfg = mrdtest::mrd_config(port, MrdPixels::Float);
  cfg.mrd.partition_images = partition_images;
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int count = (W + 16) * P;
  MrdVolumes v;
  {
    mrdtest::RawClient c(mrdtest::port_of(p.endpoint_of("mrd")));
    EXPECT_TRUE(c.ok());
    c.config_name("gridding");
    c.text(3, stream_header_to_xml(sim.header()));
    for (const auto& s : sim.spokes(0, count)) {
      // The volume placed as a scanner places it: its centre and an oblique slab.
      const auto bytes = acquisition_header_bytes(s.header, s.samples, s.coils, 2);
      ISMRMRD::ISMRMRD_AcquisitionHeader a;
      std::memcpy(&a, bytes.data(), sizeof a);
      std::copy(kCentre, kCentre + 3, a.position);
      std::copy(kSliceDir, kSliceDir + 3, a.slice_dir);
      c.acquisition(s, &a);
    }
    c.put<std::uint16_t>(4);
    EXPECT_TRUE(c.flush());
    v.r = c.read_until_close();
  }
  p.stop();
  v.rejected = p.metrics().rejected_total();
  const auto [t, k] = bart_layout(sim, W);
  const auto layout = stack_of_stars_layout(t, -1, "test");
  EXPECT_TRUE(layout.has_value());
  v.off = reconstruct_volume(stack_frames(*layout, t, k, N, "test"), cpu_gridding(), "", false);
  return v;
}

double magnitude_error(const std::vector<float>& got, const std::vector<cfloat>& ref, std::size_t first) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double r = std::abs(ref[first + i]);
    err += (got[i] - r) * (got[i] - r);
    norm += r * r;
  }
  return std::sqrt(err / norm);
}

}  // namespace

TEST(StackStream, AnMrdClientGetsEachVolumeAsOne3dImage) {
  const int P = 4, W = 32, N = 32;
  const MrdVolumes v = mrd_volumes(27462, false, P, W, N);
  EXPECT_TRUE(v.r.closed);
  EXPECT_EQ(v.rejected, 0u);
  ASSERT_EQ(v.r.images.size(), 2u);
  const auto& im = v.r.images[0];
  EXPECT_EQ(im.head.matrix_size[0], N);
  EXPECT_EQ(im.head.matrix_size[1], N);
  EXPECT_EQ(im.head.matrix_size[2], P);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(im.head.position[i], kCentre[i]);  // the volume's centre
  const auto got = mrdtest::image_values(im);
  ASSERT_EQ(got.size(), v.off.image.size());
  const double err = magnitude_error(got, v.off.image, 0);
  std::printf("MRD volume against the offline route: %.3g\n", err);
  EXPECT_LT(err, 1e-5);
  EXPECT_EQ(v.r.images[1].meta("FirstSpoke"), 16.0);
}

// mrd.partition_images: each volume as P 2D images, as scanners store 3D data: slice = the partition, the
// slab's thickness divided among them, each centred one partition further along slice_dir than the one
// before (the middle of the four straddling the volume's centre), each the offline route's plane.
TEST(StackStream, AnMrdClientMayTakeAVolumeAsOneImagePerPartition) {
  const int P = 4, W = 32, N = 32;
  const MrdVolumes v = mrd_volumes(27463, true, P, W, N);
  EXPECT_TRUE(v.r.closed);
  EXPECT_EQ(v.rejected, 0u);
  ASSERT_EQ(v.r.images.size(), std::size_t(2 * P));
  for (int z = 0; z < P; ++z) {
    const auto& im = v.r.images[std::size_t(z)];
    EXPECT_EQ(im.head.matrix_size[2], 1);
    EXPECT_EQ(im.head.slice, z);
    EXPECT_EQ(im.head.image_index, z);
    EXPECT_EQ(im.meta("Partition"), double(z));
    EXPECT_EQ(im.meta("FrameNumber"), v.r.images[0].meta("FrameNumber"));
    const float thick = im.head.field_of_view[2];
    EXPECT_GT(thick, 0.f);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(im.head.slice_dir[i], kSliceDir[i]);
      EXPECT_NEAR(im.head.position[i], kCentre[i] + (float(z) - 1.5f) * thick * kSliceDir[i], 1e-4f)
          << "partition " << z << ", axis " << i;
    }
    const auto got = mrdtest::image_values(im);
    ASSERT_EQ(got.size(), std::size_t(N) * N);
    const double err = magnitude_error(got, v.off.image, std::size_t(z) * N * N);
    std::printf("MRD partition %d against the offline route's plane: %.3g\n", z, err);
    EXPECT_LT(err, 1e-5);
  }
  EXPECT_EQ(v.r.images[std::size_t(P)].meta("FirstSpoke"), 16.0);
  EXPECT_EQ(v.r.images[std::size_t(P)].head.slice, 0);
}

namespace {

// The first `volumes` volumes of sim's stack of stars (window W, stride 16 in-plane spokes) through a
// pipeline configured by cfg, over ZeroMQ as stream `id`; none may fail.
std::vector<FrameResult> stream_volumes(const Simulator& sim, const RunConfig& cfg, std::uint32_t id,
                                        int volumes, int W) {
  const int count = (W + 16 * (volumes - 1)) * sim.params().partitions;
  Rig rig(cfg, id);
  rig.s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& s : sim.spokes(0, count)) rig.s.send_spoke(s.header, s);
  EXPECT_TRUE(rig.p.wait_frames(volumes, 60s)) << rig.p.report();
  rig.p.stop();
  EXPECT_EQ(rig.p.metrics().frames_failed.load(), 0u) << rig.p.last_error();
  return rig.c.get();
}

}  // namespace

// A stack of stars by cg-sense in a stream is one CG over the volume (VolumeSenseLive): with the same coil
// maps (recon.sens, BART [N N P C], those the offline route estimated) and no warm start, each volume is the
// offline route's one solve of the same window; with the maps estimated in the stream, the volumes are made
// and the first one's maps are estimated once per partition.
TEST(StackStream, ACgSenseVolumeStreamIsOneSolveOverTheVolume) {
  const int P = 4, W = 32, N = 32;
  const Simulator sim(test::stack_sim(N, P, 2));
  test::TempDir dir;
  const auto [t, k] = bart_layout(sim, W);
  const auto layout = stack_of_stars_layout(t, -1, "test");
  ASSERT_TRUE(layout.has_value());
  ReconParams rp = cpu_gridding();
  rp.method = ReconMethod::CgSense;
  rp.cg.warm_start = false;
  const OfflineVolume off = reconstruct_volume(stack_frames(*layout, t, k, N, "test"), rp, "", true);
  ASSERT_EQ(off.coils, 2);
  ReconParams each = rp;  // each partition its own CG: what the stream must not be doing
  each.cg.joint_volume = false;
  const double apart = test::rel_error(
      reconstruct_volume(stack_frames(*layout, t, k, N, "test"), each, "", false).image, off.image);
  std::printf("cg-sense: per-partition solves against the one over the volume: %.3g\n", apart);
  EXPECT_GT(apart, 1e-3);
  const std::string maps = dir / "maps.cfl";
  write_cfl(maps, {N, N, P, off.coils}, off.coil_maps);
  for (const bool given : {true, false}) {
    RunConfig cfg = small_config(given ? 27464 : 27465, false);
    cfg.recon.method = ReconMethod::CgSense;
    cfg.recon.cg.warm_start = false;
    if (given) cfg.recon.cg.sens = maps;
    cfg.recon.cg.maps_every = 1;  // estimated: a background refresh from the first volume on (the first keeps
                                  // the maps estimated before it)
    const auto frames = stream_volumes(sim, cfg, given ? 79 : 80, 2, W);
    ASSERT_EQ(frames.size(), 2u);
    const FrameResult& f = frames[0];
    ASSERT_EQ(f.image.size(), off.image.size());
    std::vector<cfloat> ref(off.image.size());
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = cfloat(std::abs(off.image[i]), 0.f);
    const double e = test::rel_error(f.image, ref);
    std::printf("cg-sense volume stream (maps %s) against the offline route's one solve: %.3g\n",
                given ? "given" : "estimated in the stream", e);
    // Estimated in the stream, the maps come from the same window by the same estimate: the same volume.
    // (Per-partition solves differ from the one over the volume by `apart`.)
    EXPECT_LT(e, 1e-4);
  }
}

// A stack of stars whose partitions are turned against each other (the simulator's partition_rotation_deg)
// over ZeroMQ: the volume route finds the rotation in the first window, says so once, and takes every volume
// through the 3D NUFFT as `recon` takes such a stack (each partition's own density compensation): each volume
// is the offline rotated route's of the same spokes. A method that needs one 2D problem per z position is
// refused, naming the method.
TEST(StackStream, ARotatedStackIsStreamedThroughThe3dNufft) {
  const int P = 4, W = 32, N = 32;
  SimParams sp = test::stack_sim(N, P, 2);
  sp.partition_rotation_deg = 23;
  const Simulator sim(sp);
  const auto [t, k] = bart_layout(sim, W);
  const auto layout = stack_of_stars_layout(t, -1, "test");
  ASSERT_TRUE(layout.has_value());
  EXPECT_TRUE(layout->rotated);
  const std::vector<cfloat> off = rotated_stack_gridding(*layout, t, k, N, cpu_gridding(), "test");

  const auto frames = stream_volumes(sim, small_config(27466, false), 81, 2, W);
  ASSERT_EQ(frames.size(), 2u);
  const FrameResult& f = frames[0];
  EXPECT_EQ(f.depth, P);
  EXPECT_EQ(f.first_spoke, 0u);
  EXPECT_EQ(f.last_spoke, std::uint64_t(W - 1));
  const double e = test::rel_error(f.image, off);
  std::printf("rotated stack stream against the offline rotated route: %.3g\n", e);
  EXPECT_LT(e, 1e-5);

  const Registry registry = default_registry();
  ReconParams nlinv = cpu_gridding();
  nlinv.method = ReconMethod::Nlinv;
  VolumeChain vc(nlinv, Backend::Cpu, registry);
  vc.configure(sim.header().geometry(W), P);
  try {
    vc.reconstruct(raw_window(sim, 0, W * P));
    ADD_FAILURE() << "nlinv took a rotated stack";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("nlinv"), std::string::npos) << err.what();
  }
  EXPECT_TRUE(vc.rotated());
}

// The memory a stack of stars' header implies is summed before anything is allocated: its ring holds every
// partition's window, and each z position has its own chain, so that a short header declaring many partitions
// cannot take the machine's memory.
TEST(StackStream, ItsMemoryIsBudgetedPerPartition) {
  const Registry reg = default_registry();
  StreamHeader h = Simulator(test::stack_sim(64, 1, 4)).header();
  ReconParams rp = cpu_gridding();
  const MemoryNeed one = memory_need(reg, h, rp, 64, 16, 1, false);
  h.partitions = 32;
  const MemoryNeed many = memory_need(reg, h, rp, 64, 16, 1, false);
  EXPECT_NEAR(many.recon_bytes, 32 * one.recon_bytes, 1e-6 * many.recon_bytes);
  EXPECT_NEAR(many.ring_bytes, one.ring_bytes * (64.0 * 32 + 16) / (64 + 16), 1e-6 * many.ring_bytes);
  EXPECT_GT(many.host_bytes, many.ring_bytes + many.recon_bytes);
}

// The volumetric phantom's k-space is exact: every coil at once equals each coil alone, and both equal the
// direct sum over a fine grid of the ellipsoids times the coil's 3D sensitivity, sum f(r) m_c(r)
// e^{-2 pi i kappa . r} dV over 64^3 voxels, at low frequencies (where that sum converges), within 3 %
// (0.2-2.1 %).
TEST(StackStream, ThePhantomsKspaceIsTheTransformOfTheObjectSeenByEachCoil) {
  const StackPhantom ph(4, true, 4.0);
  const auto e = ph.at(0.3);
  const int n = 64;
  const std::vector<float> f = rasterize_3d(e, n, 2);
  const double dv = std::pow(2.0 / n, 3);
  for (const auto& k :
       std::vector<std::array<double, 3>>{{0.0, 0.0, 0.0}, {1.5, -0.5, 0.5}, {-2.0, 1.0, -1.0}}) {
    std::complex<double> all[4];
    ph.kspace_all(e, k[0], k[1], k[2], all);
    for (int c = 0; c < 4; ++c) {
      const std::complex<double> one = ph.kspace(e, c, k[0], k[1], k[2]);
      EXPECT_LT(std::abs(all[c] - one), 1e-12 * std::max(1.0, std::abs(one)));
      std::complex<double> sum = 0;
      for (int l = 0; l < n; ++l)
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) {
            const float v = f[(std::size_t(l) * n + j) * n + i];
            if (v == 0.f) continue;
            const double x = (i - n / 2) * 2.0 / n, y = (j - n / 2) * 2.0 / n, z = (l - n / 2) * 2.0 / n;
            sum += double(v) * ph.sensitivity(c, x, y, z) *
                   std::polar(1.0, -2 * std::numbers::pi * (k[0] * x + k[1] * y + k[2] * z));
          }
      sum *= dv;
      EXPECT_LT(std::abs(sum - one) / std::abs(one), 0.03)
          << "coil " << c << " at (" << k[0] << ", " << k[1] << ", " << k[2] << "): " << one << " vs " << sum;
    }
  }
}
