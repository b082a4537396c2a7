// radstream as an MRD server (run --mrd-listen), driven by a protocol client written here from the protocol's
// description (raw bytes and ISMRMRD's structs, not radstream's codec): every acquisition counted, one image
// per frame back equal to the offline reconstruction of the same window (float, and int16 within its
// quantization), a clean close; the faults that end one session (unknown id, a stalled client, a vanished
// one, a 4 GB length, an unknown config) leave the server and the next session whole; busy; 1000 sessions
// in a row leak no descriptor; and replay --mrd against run --mrd-listen through the binary.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/meta.h>
#include <ismrmrd/xml.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "ingest/protocols.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_protocol.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/recon_chain.hpp"
#include "recon/registry.hpp"
#include "sim/simulator.hpp"
#include "stream/mrd_test_client.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"

using namespace radstream;
using namespace radstream::streamtest;
using namespace radstream::mrdtest;
using namespace std::chrono_literals;

namespace {

// A stream of 96 spokes through a session; each image back against the offline chain over its window.
void round_trip(MrdPixels px, int port) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(port, px);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 96);
  RawClient c(port_of(p.endpoint_of("mrd")));
  ASSERT_TRUE(c.ok());
  c.config_name("gridding");
  c.text(3, stream_header_to_xml(sim.header()));
  for (int i = 0; i < 3; ++i) c.acquisition(spokes[std::size_t(i)]);
  ASSERT_TRUE(c.flush(1));  // a message in one-byte fragments
  for (std::size_t i = 3; i < spokes.size(); ++i) c.acquisition(spokes[i]);
  c.put<std::uint16_t>(4);
  ASSERT_TRUE(c.flush());
  const Replies r = c.read_until_close();
  p.stop();
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(p.metrics().mrd.acquisitions.load(), 96u);
  EXPECT_EQ(p.metrics().spokes.load(), 96u);
  EXPECT_EQ(p.metrics().rejected_total(), 0u);
  ASSERT_EQ(r.images.size(), 5u);  // (96 - 32) / 16 + 1 frames, every one sent back
  EXPECT_EQ(p.metrics().mrd.images_sent.load(), 5u);
  ReconChain offline(cfg.recon, Backend::Cpu, reg);
  offline.configure(sim.header().geometry(32));
  for (std::size_t k = 0; k < r.images.size(); ++k) {
    const ImageBack& im = r.images[k];
    EXPECT_EQ(im.head.version, 1);
    EXPECT_EQ(im.head.matrix_size[0], 32);
    EXPECT_EQ(im.head.matrix_size[1], 32);
    EXPECT_EQ(im.head.channels, 1);
    EXPECT_EQ(im.head.image_type, ISMRMRD::ISMRMRD_IMTYPE_MAGNITUDE);
    EXPECT_EQ(im.head.image_index, k);
    EXPECT_EQ(im.head.image_series_index, r.images[0].head.image_series_index);
    EXPECT_EQ(im.head.attribute_string_len, im.attributes.size());
    EXPECT_NE(im.attributes.find("<name>DataRole</name>"), std::string::npos);
    EXPECT_NE(im.attributes.find("<name>WindowCenter</name>"), std::string::npos);
    EXPECT_NE(im.attributes.find("<name>ImageProcessingHistory</name>"), std::string::npos);
    EXPECT_EQ(im.meta("FrameNumber"), double(k + 1));
    const auto first = std::size_t(im.meta("FirstSpoke"));
    const Frame ref = frame_from_spokes(sim.header(), std::span(spokes).subspan(first, 32));
    const auto img = offline.reconstruct(ref);
    const auto got = image_values(im);
    double err = 0, norm = 0, maxdiff = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double d = double(got[i]) - double(img.data[i].real());
      err += d * d;
      norm += double(img.data[i].real()) * img.data[i].real();
      maxdiff = std::max(maxdiff, std::abs(d));
    }
    if (px == MrdPixels::Float) {
      EXPECT_LE(std::sqrt(err / norm), 1e-5) << "image " << k;
    } else {  // int16, 12 stored bits: within half a step of the scale
      EXPECT_LE(maxdiff, 0.5 / im.meta("ImageScale") * 1.001) << "image " << k;
      EXPECT_EQ(im.head.data_type, ISMRMRD::ISMRMRD_SHORT);
    }
  }
}

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// The process's resident memory, KiB (/proc/self/statm: pages).
long resident_kib() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace

TEST(MrdServer, RoundTripFloatImagesEqualTheOfflineWindows) {
  round_trip(MrdPixels::Float, 26180);
}

TEST(MrdServer, RoundTripInt16ImagesWithinTheirQuantization) {
  round_trip(MrdPixels::Int16, 26181);
}

// Complex images (image_type 5, complex64): a cg-sense stream's frames come back with their phase, equal to
// the offline chain's complex solution over the same windows in the same order (warm starts included), and
// their magnitudes to its image; a session that asks for a method without phase (gridding, root-sum-of-
// squares) is told why and closed, and a run configured so is refused at start-up.
TEST(MrdServer, ComplexImagesCarryThePhaseOfTheSolution) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26262, MrdPixels::Complex);
  cfg.recon.method = ReconMethod::CgSense;
  cfg.recon.cg.iterations = 6;
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 96);
  const Frame calib = frame_from_spokes(sim.header(), std::span(spokes).subspan(0, 32));
  const HostBuffer<cfloat> maps = estimate_coil_maps(calib.data.view(), calib.traj.view(), 32);
  test::TempDir dir;
  write_cfl(dir / "sens", {32, 32, 1, 3}, maps.view().span());
  cfg.recon.cg.sens = dir / "sens.cfl";
  {
    RunConfig bad = mrd_config(26262, MrdPixels::Complex);
    try {
      bad.validate();
      ADD_FAILURE() << "complex images from gridding with rss accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--mrd-pixels complex"), std::string::npos) << e.what();
    }
  }
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  Replies r;
  {
    RawClient c(port);
    c.text(3, stream_header_to_xml(sim.header()));
    for (const auto& sp : spokes) c.acquisition(sp);
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    r = c.read_until_close();
  }
  Replies refused;
  {  // refused once its header has come (a FIRE client reads nothing before)
    RawClient c(port);
    c.config_name("gridding");
    c.text(3, stream_header_to_xml(sim.header()));
    ASSERT_TRUE(c.flush());
    refused = c.read_until_close();
  }
  p.stop();
  EXPECT_TRUE(r.closed);
  ASSERT_EQ(r.images.size(), 5u);
  ReconParams op = cfg.recon;
  op.keep_phase = true;
  ReconChain offline(op, Backend::Cpu, reg);
  offline.configure(sim.header().geometry(32));
  offline.set_coil_maps(maps.view());
  for (std::size_t k = 0; k < r.images.size(); ++k) {
    const ImageBack& im = r.images[k];
    EXPECT_EQ(im.head.data_type, ISMRMRD::ISMRMRD_CXFLOAT);
    EXPECT_EQ(im.head.image_type, ISMRMRD::ISMRMRD_IMTYPE_COMPLEX);
    EXPECT_EQ(im.meta("PhaseKept"), 1.0);
    ASSERT_EQ(im.pixels.size(), std::size_t(32) * 32 * 8);
    std::vector<cfloat> got(std::size_t(32) * 32);
    std::memcpy(got.data(), im.pixels.data(), im.pixels.size());
    const auto first = std::size_t(im.meta("FirstSpoke"));
    const auto mag =
        offline.reconstruct(frame_from_spokes(sim.header(), std::span(spokes).subspan(first, 32)));
    const auto cx = offline.complex_image();
    const std::vector<cfloat> want(cx.data, cx.data + cx.size());
    double imag = 0, all = 0, mag_err = 0, mag_norm = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      imag += double(got[i].imag()) * got[i].imag();
      all += std::norm(got[i]);
      const double d = std::abs(got[i]) - double(mag.data[i].real());
      mag_err += d * d;
      mag_norm += double(mag.data[i].real()) * mag.data[i].real();
    }
    const double e = test::rel_error(got, want);
    std::printf("complex image %zu: vs offline solution %.3g, magnitude %.3g, imaginary energy %.3f\n", k, e,
                std::sqrt(mag_err / mag_norm), imag / all);
    EXPECT_LE(e, 1e-5) << "image " << k;
    EXPECT_LE(std::sqrt(mag_err / mag_norm), 1e-5) << "image " << k;
    EXPECT_GT(imag / all, 0.01) << "image " << k;  // the phase is there
  }
  EXPECT_TRUE(refused.closed);
  EXPECT_TRUE(refused.images.empty());
  ASSERT_FALSE(refused.texts.empty());
  EXPECT_EQ(refused.texts.front().rfind("ERR", 0), 0u) << refused.texts.front();
  EXPECT_NE(refused.texts.front().find("keeps the phase"), std::string::npos) << refused.texts.front();
}

TEST(MrdServer, FaultsEndOnlyTheirSession) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26182, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 40);
  auto& mm = p.metrics().mrd;
  auto err_text = [](const Replies& r) { return r.texts.empty() ? std::string() : r.texts.front(); };
  {  // an unknown id
    RawClient c(port);
    c.put<std::uint16_t>(999);
    c.put<std::uint32_t>(0);
    ASSERT_TRUE(c.flush());
    const Replies r = c.read_until_close();
    EXPECT_TRUE(r.closed);
    EXPECT_NE(err_text(r).find("ERR"), std::string::npos);
    EXPECT_NE(err_text(r).find("999"), std::string::npos) << err_text(r);
    EXPECT_EQ(mm.faults[std::size_t(mrd::Fault::UnknownId)].load(), 1u);
  }
  {  // a stalled client: part of a header, then nothing (message timeout 0.5 s)
    RawClient c(port);
    c.put<std::uint16_t>(3);
    c.put<std::uint32_t>(100);
    c.raw("<ismrmrd", 8);
    ASSERT_TRUE(c.flush());
    const auto t0 = std::chrono::steady_clock::now();
    const Replies r = c.read_until_close();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    EXPECT_NE(err_text(r).find("within"), std::string::npos) << err_text(r);
    EXPECT_EQ(mm.faults[std::size_t(mrd::Fault::Timeout)].load(), 1u);
  }
  {  // a 4 GB header length
    RawClient c(port);
    c.put<std::uint16_t>(3);
    c.put<std::uint32_t>(0xffffffffu);
    ASSERT_TRUE(c.flush());
    const Replies r = c.read_until_close();
    EXPECT_NE(err_text(r).find("4294967295"), std::string::npos) << err_text(r);
    EXPECT_EQ(mm.faults[std::size_t(mrd::Fault::TooLong)].load(), 1u);
  }
  {  // an unknown config name: refused once the header has come, the choices named (a session's configs
     // only: not the server's own realtime.yaml), then close
    RawClient c(port);
    c.config_name("nonsense");
    c.text(3, stream_header_to_xml(sim.header()));
    ASSERT_TRUE(c.flush());
    const Replies r = c.read_until_close();
    EXPECT_TRUE(r.closed);
    const std::string t = err_text(r);
    EXPECT_EQ(t.rfind("ERR", 0), 0u) << t;
    for (const char* name : {"nonsense", "gridding", "fbp", "cg-sense", "nlinv", "accurate"})
      EXPECT_NE(t.find(name), std::string::npos) << name << " in " << t;
    EXPECT_EQ(t.find("realtime"), std::string::npos) << t;
    EXPECT_EQ(mm.sessions_refused.load(), 1u);
  }
  {  // JSON settings right after the header: a non-empty customconfig overrides config
    RawClient c(port);
    c.text(3, stream_header_to_xml(sim.header()));
    c.text(5, R"({"parameters": {"config": "gridding", "customconfig": "fbp"}})");
    for (const auto& s : spokes) c.acquisition(s);
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    const Replies r = c.read_until_close();
    EXPECT_TRUE(r.closed);
    ASSERT_EQ(r.texts.size(), 2u);  // what the session runs, and the summary
    EXPECT_EQ(r.texts[0].rfind("DBG radstream: reconstructing with fbp (fbp, window 32, stride 16", 0), 0u)
        << r.texts[0];
    EXPECT_EQ(r.texts[1], "DBG radstream: summary: 40 spokes, 1 frames due, 1 made, 1 sent");
    EXPECT_EQ(r.images.size(), 1u);
    auto meta = r.images[0].attributes;
    EXPECT_NE(meta.find("<value>fbp</value>"), std::string::npos) << meta;
  }
  {  // a client that vanishes mid-acquisition
    RawClient c(port);
    c.text(3, stream_header_to_xml(sim.header()));
    c.acquisition(spokes[0]);
    c.put<std::uint16_t>(1008);
    c.raw(spokes[1].data.data(), 100);
    ASSERT_TRUE(c.flush());
    c.close();
    ASSERT_TRUE(eventually([&] { return mm.faults[std::size_t(mrd::Fault::Truncated)].load() == 1u; }));
  }
  {  // busy: a second client while one session runs, told once its header has come
    RawClient a(port);
    a.config_name("fbp");
    a.text(3, stream_header_to_xml(sim.header()));
    ASSERT_TRUE(a.flush());
    ASSERT_TRUE(eventually([&] { return mm.sessions.load() == 7u && mm.sessions_admitted.load() == 3u; }));
    RawClient b(port);
    b.text(3, stream_header_to_xml(sim.header()));
    ASSERT_TRUE(b.flush());
    const Replies rb = b.read_until_close();
    EXPECT_TRUE(rb.closed);
    EXPECT_NE(err_text(rb).find("busy"), std::string::npos) << err_text(rb);
    EXPECT_EQ(mm.busy_refused.load(), 1u);
    for (const auto& s : spokes) a.acquisition(s);
    a.put<std::uint16_t>(4);
    ASSERT_TRUE(a.flush());
    const Replies ra = a.read_until_close();  // the session in hand went on
    EXPECT_TRUE(ra.closed);
    EXPECT_EQ(ra.images.size(), 1u);  // (40 - 32) / 16 + 1
    ASSERT_EQ(ra.texts.size(), 2u);   // what it runs and its summary, no error
    EXPECT_EQ(ra.texts[0].rfind("DBG radstream: reconstructing with fbp (", 0), 0u) << ra.texts[0];
    EXPECT_EQ(ra.texts[1].rfind("DBG radstream: summary: 40 spokes, 1 frames due", 0), 0u) << ra.texts[1];
    // The vanished client's stream was closed for the ingest before this session's place was given: none of
    // this session's messages reached an ingest still following the dead stream (CI once saw all 42 refused
    // as foreign_stream and no image).
    EXPECT_EQ(p.metrics().rejected_total(), 0u);
  }
  // 1000 sessions in a row: each closed cleanly, no descriptor left behind.
  const std::size_t fds = open_fds();
  for (int i = 0; i < 1000; ++i) {
    RawClient c(port);
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    ASSERT_TRUE(c.read_until_close().closed) << "session " << i;
  }
  ASSERT_TRUE(eventually([&] { return open_fds() <= fds + 2; })) << open_fds() << " vs " << fds;
  EXPECT_EQ(mm.sessions.load(), 1008u);  // (the client told busy after its header counts)
  // Memory: 1000 whole sessions (config, header, 32 acquisitions, one image back, close) after 50 that warm
  // the allocator and the chain leave the process within 16 MiB of where it was: a session's buffers go with
  // it.
  const std::string xml = stream_header_to_xml(sim.header());
  const auto whole = [&](int i) {
    RawClient c(port);
    c.config_name("fbp");
    c.text(3, xml);
    for (int k = 0; k < 32; ++k) c.acquisition(spokes[std::size_t(k)]);
    c.put<std::uint16_t>(4);
    if (!c.flush()) return false;
    const Replies r = c.read_until_close();
    std::string said;
    for (const auto& t : r.texts) said += t + "\n";
    EXPECT_EQ(r.images.size(), 1u) << "session " << i << ": " << said;
    return r.closed;
  };
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(whole(i));
  const long before = resident_kib();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(whole(i));
  ASSERT_TRUE(eventually([&] { return open_fds() <= fds + 2; })) << open_fds() << " vs " << fds;
  const long after = resident_kib();
  std::printf("1000 whole MRD sessions: resident memory %ld -> %ld KiB (%+ld KiB), descriptors %zu -> %zu\n",
              before, after, after - before, fds, open_fds());
  EXPECT_LT(after - before, 16 * 1024);
  EXPECT_EQ(mm.sessions.load(), 2058u);
  p.stop();
}

// The binaries: replay --mrd into run --mrd-listen, the images stored; an unknown config exits 3.
TEST(MrdServer, ReplayMrdAgainstRunMrdListen) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const auto sim = test::run_command(bin + " simulate --out " + (dir / "rec.h5") +
                                     " --spokes 160 --matrix 32 --coils 3 --snr 30");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const std::string run = bin + " run --headless --endpoint " + tcp(26183) +
                          " --mrd-listen tcp://127.0.0.1:26184 --mrd-config-dir " +
                          std::string(RADSTREAM_CONFIG_DIR) +
                          " --window 32 --stride 16 --no-skip --duration 8 "
                          "--images '' --metrics-json " +
                          (dir / "m.json") + " > " + (dir / "run.log") + " 2>&1 & pid=$!; sleep 1.5; ";
  const auto r = test::run_command(
      "(" + run + bin + " replay " + (dir / "rec.h5") +
      " --mrd tcp://127.0.0.1:26184 --config gridding --speed max --images-out " + (dir / "back.h5") +
      "; rc=$?; " + bin + " replay " + (dir / "rec.h5") +
      " --mrd tcp://127.0.0.1:26184 --config nonsense; echo rc2=$?; kill -INT $pid; wait $pid; exit $rc)");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("9 images back"), std::string::npos) << r.output;  // (160 - 32) / 16 + 1
  EXPECT_NE(r.output.find("rc2=3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unknown config 'nonsense'"), std::string::npos) << r.output;
  ISMRMRD::Dataset d((dir / "back.h5").c_str(), "dataset", false);
  EXPECT_EQ(d.getNumberOfImages("images_1"), 9u);
  std::ifstream mj(dir / "m.json");
  const auto j = nlohmann::json::parse(mj);
  EXPECT_EQ(j["mrd"]["acquisitions"], 160);
  EXPECT_EQ(j["mrd"]["images_sent"], 9);
  EXPECT_EQ(j["mrd"]["sessions"], 2);
}

// Scanner raw data: spokes without a trajectory get their angles from the header and reconstruct as the same
// spokes with their trajectory do.
TEST(MrdServer, SpokesWithoutTrajectoryGiveTheSameImages) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26188, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 64);
  std::vector<Replies> got;
  for (bool traj : {true, false}) {
    RawClient c(port);
    c.config_name("gridding");
    c.text(3, stream_header_to_xml(sim.header()));
    for (const auto& s : spokes) c.acquisition(s, nullptr, traj);
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    got.push_back(c.read_until_close());
  }
  p.stop();
  ASSERT_EQ(got[0].images.size(), 3u);
  ASSERT_EQ(got[1].images.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    const auto a = image_values(got[0].images[k]), b = image_values(got[1].images[k]);
    double e = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      e += double(a[i] - b[i]) * double(a[i] - b[i]);
      n += double(a[i]) * a[i];
    }
    EXPECT_LE(std::sqrt(e / n), 1e-5) << "image " << k;
  }
}

// A scanner's radial header that gives no spokes per rotation (no encodingLimits.kspace_encoding_step_1, none
// of radstream's userParameters): spokes without a trajectory cannot be placed, so each is refused by name
// (no_angle), never reconstructed on guessed angles; and the pipeline's warning reaches the client as a WRN
// text (the pipeline's log lines are forwarded). The same header with trajectories in the spokes is fine.
TEST(MrdServer, SpokesWhoseAngleCannotBeKnownAreRefusedAndTheClientIsTold) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26190, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 40);
  ISMRMRD::IsmrmrdHeader x;
  ISMRMRD::deserialize(stream_header_to_xml(sim.header()).c_str(), x);
  x.encoding[0].encodingLimits.kspace_encoding_step_1 = ISMRMRD::Optional<ISMRMRD::Limit>();
  x.encoding[0].trajectory = ISMRMRD::TrajectoryType::RADIAL;
  x.encoding[0].trajectoryDescription = ISMRMRD::Optional<ISMRMRD::TrajectoryDescription>();
  std::ostringstream xml;
  ISMRMRD::serialize(x, xml);
  std::vector<Replies> got;
  for (bool traj : {false, true}) {
    RawClient c(port);
    c.config_name("gridding");
    c.text(3, xml.str());
    for (const auto& sp : spokes) c.acquisition(sp, nullptr, traj);
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    got.push_back(c.read_until_close());
  }
  const auto rejected = p.metrics().rejected[int(wire::Reject::NoAngle)].load();
  p.stop();
  EXPECT_EQ(rejected, 40u);
  EXPECT_EQ(got[0].images.size(), 0u);
  bool told = false;
  for (const auto& t : got[0].texts) {
    std::printf("client told: %s\n", t.c_str());
    told |= t.rfind("WRN radstream: ingest:", 0) == 0 && t.find("no_angle") != std::string::npos &&
            t.find("kspace_encoding_step_1") != std::string::npos;
  }
  EXPECT_TRUE(told);
  EXPECT_EQ(got[1].images.size(), 1u);  // (40 - 32) / 16 + 1, placed by their own trajectories
}

// Partial (asymmetric) echoes as scanners send them: each spoke without its first 1/8 (number_of_samples
// 7/8 of the header's readout, center_sample moved accordingly), with and without its trajectory. Both give
// the images of the whole readouts with those samples zeroed (<= 1e-5): every sample at its true k, the
// density that of its position. (Against the whole readouts they differ by the missing outer k-space, ~14 %
// here.)
TEST(MrdServer, PartialEchoesArePlacedAtTheirTrueK) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26191, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  SimParams sp = mrd_sim();
  sp.snr = 0;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 64);
  const int S = sim.header().samples, d = S / 8, C = sp.coils;
  std::vector<Replies> got;
  for (int kind = 0; kind < 4;
       ++kind) {  // whole; whole with the first d zeroed; partial with trajectory; without
    RawClient c(port);
    c.config_name("gridding");
    c.text(3, stream_header_to_xml(sim.header()));
    for (const auto& s : spokes) {
      if (kind <= 1) {
        Spoke zeroed = s;
        for (int k = 0; kind == 1 && k < C; ++k)
          std::fill_n(zeroed.data.begin() + std::ptrdiff_t(k) * S, d, cfloat(0.f, 0.f));
        c.acquisition(zeroed);
        continue;
      }
      Spoke part = s;
      part.samples = S - d;
      part.traj.assign(s.traj.begin() + 2 * d, s.traj.end());
      part.data.clear();
      for (int k = 0; k < C; ++k)
        part.data.insert(part.data.end(), s.data.begin() + std::ptrdiff_t(k) * S + d,
                         s.data.begin() + std::ptrdiff_t(k + 1) * S);
      const bool traj = kind == 2;
      const auto bytes = acquisition_header_bytes(part.header, part.samples, C, traj ? 2 : 0);
      ISMRMRD::ISMRMRD_AcquisitionHeader h;
      std::memcpy(&h, bytes.data(), sizeof h);
      h.center_sample = std::uint16_t(S / 2 - d);
      c.acquisition(part, &h, traj);
    }
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    got.push_back(c.read_until_close());
  }
  const auto mismatched = p.metrics().rejected[int(wire::Reject::GeometryMismatch)].load();
  p.stop();
  EXPECT_EQ(mismatched, 0u);
  for (const auto& r : got) ASSERT_EQ(r.images.size(), 3u);  // (64 - 32) / 16 + 1
  const auto rel = [](const std::vector<float>& a, const std::vector<float>& b) {
    double e = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      e += double(a[i] - b[i]) * (a[i] - b[i]), n += double(b[i]) * b[i];
    return std::sqrt(e / n);
  };
  for (std::size_t k = 0; k < 3; ++k) {
    const auto whole = image_values(got[0].images[k]), zeroed = image_values(got[1].images[k]),
               with = image_values(got[2].images[k]), without = image_values(got[3].images[k]);
    std::printf(
        "frame %zu: partial echo vs the zeroed whole readouts %.2g (with trajectory), %.2g (without); "
        "vs the whole readouts %.3f\n",
        k, rel(with, zeroed), rel(without, zeroed), rel(with, whole));
    EXPECT_LE(rel(with, zeroed), 1e-5);
    EXPECT_LE(rel(without, zeroed), 1e-5);
  }
}

// Noise scans first: every later spoke arrives prewhitened, s L^-1 y with Psi = L L^H computed here in double
// from the noise sent, s = sqrt(2 x 2.5 us / 5 us x 0.793) for noise read at half the bandwidth.
TEST(MrdServer, NoiseScansPrewhitenEveryLaterSpoke) {
  test::TempDir dir;
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26189, MrdPixels::Float);
  cfg.sinks.record = dir / "white.h5";
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 40);
  const int C = 3, S = spokes[0].samples;
  // Correlated noise: n = M z.
  const std::complex<double> M[3][3] = {
      {{1.0, 0}, {0, 0}, {0, 0}}, {{0.5, 0.2}, {0.8, 0}, {0, 0}}, {{-0.3, 0.1}, {0.2, -0.4}, {1.3, 0}}};
  std::mt19937 rng(7);
  std::normal_distribution<double> g(0, 0.01);
  std::vector<std::vector<cfloat>> noise;
  for (int k = 0; k < 20; ++k) {
    std::vector<cfloat> n(std::size_t(C) * S);
    for (int s = 0; s < S; ++s) {
      std::complex<double> z[3];
      for (auto& v : z) v = {g(rng), g(rng)};
      for (int i = 0; i < C; ++i) {
        std::complex<double> a = 0;
        for (int j = 0; j < C; ++j) a += M[i][j] * z[j];
        n[std::size_t(i) * S + s] = cfloat(a);
      }
    }
    noise.push_back(n);
  }
  RawClient c(port_of(p.endpoint_of("mrd")));
  c.text(3, stream_header_to_xml(sim.header()));
  for (const auto& n : noise) {
    Spoke s = spokes[0];
    s.data = n;
    s.header.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
    const auto hb = acquisition_header_bytes(s.header, S, C, 0);
    ISMRMRD::ISMRMRD_AcquisitionHeader h;
    std::memcpy(&h, hb.data(), 340);
    h.sample_time_us = 5.0f;
    c.acquisition(s, &h, false);
  }
  for (const auto& s : spokes) {
    const auto hb = acquisition_header_bytes(s.header, S, C, 2);
    ISMRMRD::ISMRMRD_AcquisitionHeader h;
    std::memcpy(&h, hb.data(), 340);
    h.sample_time_us = 2.5f;
    c.acquisition(s, &h, true);
  }
  c.put<std::uint16_t>(4);
  ASSERT_TRUE(c.flush());
  const Replies r = c.read_until_close();
  EXPECT_TRUE(r.closed);
  ASSERT_TRUE(eventually([&] { return p.metrics().recorded.load() == 40u; }));
  p.stop();
  EXPECT_EQ(p.metrics().mrd.noise.load(), 20u);
  // The reference, in double: Psi, its Cholesky factor, L^-1 y.
  std::complex<double> psi[3][3] = {};
  std::size_t count = 0;
  for (const auto& n : noise)
    for (int s = 0; s < S; ++s, ++count)
      for (int i = 0; i < C; ++i)
        for (int j = 0; j < C; ++j)
          psi[i][j] += std::complex<double>(n[std::size_t(i) * S + s]) *
                       std::conj(std::complex<double>(n[std::size_t(j) * S + s]));
  for (auto& row : psi)
    for (auto& v : row) v /= double(count - 1);
  std::complex<double> L[3][3] = {};
  for (int j = 0; j < C; ++j) {
    double d = psi[j][j].real();
    for (int k = 0; k < j; ++k) d -= std::norm(L[j][k]);
    L[j][j] = std::sqrt(d);
    for (int i = j + 1; i < C; ++i) {
      std::complex<double> v = psi[i][j];
      for (int k = 0; k < j; ++k) v -= L[i][k] * std::conj(L[j][k]);
      L[i][j] = v / L[j][j];
    }
  }
  const double scale = std::sqrt(2.0 * 2.5 / 5.0 * 0.793);
  const MrdRecording rec = read_mrd(dir / "white.h5");
  ASSERT_EQ(rec.spokes.size(), 40u);
  double e = 0, n = 0;
  for (std::size_t k = 0; k < 40; ++k)
    for (int s = 0; s < S; ++s) {
      std::complex<double> x[3];  // L x = y, forward substitution
      for (int i = 0; i < C; ++i) {
        std::complex<double> v = spokes[k].data[std::size_t(i) * S + s];
        for (int j = 0; j < i; ++j) v -= L[i][j] * x[j];
        x[i] = v / L[i][i];
      }
      for (int i = 0; i < C; ++i) {
        const std::complex<double> want = scale * x[i];
        e += std::norm(want - std::complex<double>(rec.spokes[k].data[std::size_t(i) * S + s]));
        n += std::norm(want);
      }
    }
  EXPECT_LE(std::sqrt(e / n), 1e-5);
}

// A socket fuzz of the framing: sessions of valid messages (a header, 200 small acquisitions) with random
// damage (bytes changed, cut, inserted, lengths made huge), sent in random fragments. Every session ends by a
// close or a named fault, the server never dies, and a clean session afterwards is served whole. 2,000
// sessions (over 200,000 messages) here; scripts/mrd_fuzz.sh runs 20,000.
TEST(MrdServer, SocketFuzzOfTheFraming) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26190, MrdPixels::Float);
  cfg.mrd.message_timeout_s = 0.2;
  cfg.mrd.idle_timeout_s = 0.5;
  cfg.stream.max_samples = 256;
  cfg.mrd.max_sessions = 64;  // a client that has just closed may still be ending on the server
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  SimParams sp;
  sp.matrix = 8;
  sp.coils = 2;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 200);
  std::vector<std::byte> valid;
  // Rebuild the valid stream's bytes by hand (the same order the client writes).
  {
    auto put = [&](const void* q, std::size_t n) {
      const auto* c = static_cast<const std::byte*>(q);
      valid.insert(valid.end(), c, c + n);
    };
    const std::string xml = stream_header_to_xml(sim.header());
    const std::uint16_t h = 3;
    const std::uint32_t len = std::uint32_t(xml.size() + 1);
    put(&h, 2);
    put(&len, 4);
    put(xml.c_str(), xml.size() + 1);
    for (const auto& s : spokes) {
      const std::uint16_t id = 1008;
      const auto head = acquisition_header_bytes(s.header, s.samples, s.coils, 2);
      put(&id, 2);
      put(head.data(), head.size());
      put(s.traj.data(), s.traj.size() * 4);
      put(s.data.data(), s.data.size() * 8);
    }
  }
  const char* env = std::getenv("RADSTREAM_MRD_FUZZ_SESSIONS");
  const int sessions = env ? std::atoi(env) : 2000;
  std::mt19937 rng(20261126);
  for (int k = 0; k < sessions; ++k) {
    std::vector<std::byte> b = valid;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[at] = std::byte(rng());
          break;
        case 1:
          b.resize(std::max<std::size_t>(at, 1));
          break;
        case 2:
          b.insert(b.begin() + std::ptrdiff_t(at), std::byte(rng()));
          break;
        default:
          if (at + 4 <= b.size()) {
            const std::uint32_t v = rng() % 2 ? 0xffffffffu : std::uint32_t(rng());
            std::memcpy(b.data() + at, &v, 4);
          }
      }
    }
    if (rng() % 2) {  // a clean close after the damage, or none (the server times the session out)
      const std::uint16_t close = 4;
      const auto* c = reinterpret_cast<const std::byte*>(&close);
      b.insert(b.end(), c, c + 2);
    }
    RawClient c(port);
    ASSERT_TRUE(c.ok()) << "session " << k << ": the server stopped accepting";
    c.raw(b.data(), b.size());
    c.flush(1 + rng() % 4096);  // the server may have ended the session already: a failed send is fine
    c.close();
  }
  // Every session ended; the server still serves a clean one whole.
  auto& mm = p.metrics().mrd;
  ASSERT_TRUE(eventually(
      [&] { return mm.sessions.load() + mm.busy_refused.load() == std::uint64_t(sessions); }, 30s));
  bool ok = false;
  for (int tries = 0; tries < 100 && !ok; ++tries) {  // the last fuzzed sessions may still hold the one slot
    RawClient t(port);
    t.config_name("gridding");
    t.raw(valid.data(), valid.size());
    t.put<std::uint16_t>(4);
    ASSERT_TRUE(t.flush());
    const Replies r = t.read_until_close();
    ok = r.closed && std::none_of(r.texts.begin(), r.texts.end(),
                                  [](const std::string& t) { return t.rfind("ERR", 0) == 0; });
    if (!ok) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(ok);
  p.stop();
  const auto& f = p.metrics().mrd.faults;
  std::uint64_t faults = 0;
  for (const auto& x : f) faults += x.load();
  std::printf("socket fuzz: %d sessions (%llu told busy), %llu named faults, %llu acquisitions taken\n",
              sessions, (unsigned long long)mm.busy_refused.load(), (unsigned long long)faults,
              (unsigned long long)mm.acquisitions.load());
  EXPECT_GT(faults, std::uint64_t(sessions) / 4);
}

// Strings a client chooses (a config name, a text message) reach the server's log through the printable-line
// filter: an escape sequence or a line break cannot recolour the terminal or forge a log line (they used to
// reach the log raw), and the unknown-config answer names no server path. Through the real binary.
TEST(MrdServer, ClientStringsCannotForgeLogLines) {
  test::TempDir dir;
  const std::string log = dir / "run.log";
  std::system(("(" + test::radstream_binary() + " run --headless --backend cpu --endpoint " + tcp(26292) +
               " --mrd-listen tcp://127.0.0.1:26293 --mrd-config-dir " + std::string(RADSTREAM_CONFIG_DIR) +
               " --duration 4 --report-interval-s 0 > " + log + " 2>&1; echo EXITED >> " + log + ") &")
                  .c_str());
  std::unique_ptr<RawClient> c;
  for (int i = 0; i < 100 && !(c && c->ok()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c = std::make_unique<RawClient>(26293);
  }
  ASSERT_TRUE(c && c->ok());
  c->config_name("nonsense\x1b[2J\x1b[31m\nFAKE LOG LINE from a config name");
  c->text(3, stream_header_to_xml(Simulator(SimParams{}).header()));  // refused once its header has come
  ASSERT_TRUE(c->flush());
  const Replies refused = c->read_until_close();
  c.reset();
  ASSERT_FALSE(refused.texts.empty());
  EXPECT_EQ(refused.texts[0].find(RADSTREAM_CONFIG_DIR), std::string::npos) << refused.texts[0];
  EXPECT_EQ(refused.texts[0].find('\x1b'), std::string::npos);
  RawClient t(26293);
  ASSERT_TRUE(t.ok());
  t.config_name("gridding");
  t.text(5, "hello\x1b]0;owned\x07\r\nFAKE LOG LINE from a text message");
  t.put<std::uint16_t>(4);
  ASSERT_TRUE(t.flush());
  t.read_until_close();
  std::string text;
  for (int i = 0; i < 200 && text.find("EXITED") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream f(log);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_NE(text.find("EXITED"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  std::istringstream lines(text);
  std::string line;
  int mentions = 0;
  while (std::getline(lines, line)) {
    EXPECT_NE(line.rfind("FAKE LOG LINE", 0), 0u) << "a forged line: " << line;
    mentions += line.find("FAKE LOG LINE") != std::string::npos;
  }
  EXPECT_GE(mentions, 2) << text;  // each string logged, inside the server's own lines
}

// A flood of text messages (each logged, a JSON one resetting the reconstruction) ends the session with an
// ERR after 256, instead of 20,000 resets, texts and log lines; the next client is served.
TEST(MrdServer, ATextFloodEndsTheSessionWithAnErr) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26298, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  RawClient c(port);
  c.config_name("gridding");
  for (int i = 0; i < 2000; ++i) c.text(5, "{\"parameters\": {}}");
  c.flush();
  const Replies r = c.read_until_close();
  bool told = false;
  for (const auto& t : r.texts)
    told = told || (t.find("ERR") == 0 && t.find("more than 256 text") != std::string::npos);
  EXPECT_TRUE(told) << (r.texts.empty() ? std::string("no text") : r.texts.back());
  EXPECT_LE(p.metrics().mrd.texts.load(), 257u);
  RawClient next(port);
  ASSERT_TRUE(next.ok());
  next.config_name("gridding");
  next.put<std::uint16_t>(4);
  ASSERT_TRUE(next.flush());
  EXPECT_TRUE(next.read_until_close().closed);
  p.stop();
}

// Noise acquisitions within the pipeline's limits are taken into the prewhitening up to a budget of 2^18
// samples; past it they are counted and left out, and the client is told once, so that a flood of noise
// scans cannot keep the session (and the server's slot) busy for minutes.
TEST(MrdServer, NoiseBeyondTheBudgetIsLeftOutAndTheClientTold) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26299, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(mrd_sim());
  Spoke s = sim.spokes(0, 1)[0];
  const int S = 4096, C = s.coils;
  s.samples = S;
  s.data.assign(std::size_t(C) * S, cfloat(0.01f, -0.02f));
  s.header.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
  RawClient c(port_of(p.endpoint_of("mrd")));
  c.text(3, stream_header_to_xml(sim.header()));
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 300; ++k) c.acquisition(s, nullptr, false);
  c.put<std::uint16_t>(4);
  ASSERT_TRUE(c.flush());
  const Replies r = c.read_until_close();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.stop();
  EXPECT_EQ(p.metrics().mrd.noise.load(), 300u);
  bool told = false;
  for (const auto& t : r.texts) told = told || t.find("noise samples") != std::string::npos;
  EXPECT_TRUE(told);
  EXPECT_LT(seconds, 5.0);
}
