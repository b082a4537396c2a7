// MRD stream files (io/mrd_stream_file.hpp): `run --record X.mrd` writes the header first, every acquisition,
// the close last, read here by the test's own parser (this BART build has no `ismrmrd --stream`); a stream
// file converted from an HDF5 recording holds the same acquisitions byte for byte and reconstructs the same
// (to float rounding); a file cut short keeps its whole acquisitions; the format is told by the first bytes
// (MRD v2 named).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <ismrmrd/ismrmrd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ingest/protocols.hpp"
#include "io/cfl.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_reader.hpp"
#include "io/mrd_stream_file.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/sender.hpp"

using namespace radstream;
using namespace radstream::streamtest;

namespace {

struct Parsed {
  std::vector<std::uint16_t> ids;
  std::string xml;
  std::vector<std::vector<char>> acquisitions;  // header + trajectory + data bytes
};

// The file as the protocol's description reads it: id, then the body by its own sizes.
Parsed parse_stream_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  Parsed p;
  std::uint16_t id;
  while (f.read(reinterpret_cast<char*>(&id), 2)) {
    p.ids.push_back(id);
    if (id == 3) {
      std::uint32_t n;
      f.read(reinterpret_cast<char*>(&n), 4);
      std::string t(n, '\0');
      f.read(t.data(), n);
      while (!t.empty() && t.back() == '\0') t.pop_back();
      p.xml = t;
    } else if (id == 1008) {
      ISMRMRD::ISMRMRD_AcquisitionHeader h;
      f.read(reinterpret_cast<char*>(&h), 340);
      const std::size_t body =
          std::size_t(h.number_of_samples) * (h.trajectory_dimensions * 4 + h.active_channels * 8);
      std::vector<char> a(340 + body);
      std::memcpy(a.data(), &h, 340);
      f.read(a.data() + 340, std::streamsize(body));
      p.acquisitions.push_back(std::move(a));
    } else if (id != 4) {
      ADD_FAILURE() << "unexpected id " << id;
      break;
    }
  }
  return p;
}

std::vector<char> bytes_of(const RawSpoke& r) {
  std::vector<char> a(340 + r.traj.size() * 4 + r.data.size() * 8);
  std::memcpy(a.data(), r.acq_header.data(), 340);
  std::memcpy(a.data() + 340, r.traj.data(), r.traj.size() * 4);
  std::memcpy(a.data() + 340 + r.traj.size() * 4, r.data.data(), r.data.size() * 8);
  return a;
}

}  // namespace

TEST(MrdStreamFile, ConvertedFromHdf5HoldsTheSameAcquisitionsAndReconstructsTheSame) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  ASSERT_EQ(
      test::run_command(bin + " simulate --out " + (dir / "rec.h5") + " --spokes 96 --matrix 32 --coils 3")
          .exit_code,
      0);
  const auto c =
      test::run_command(bin + " convert --input " + (dir / "rec.h5") + " --out " + (dir / "rec.mrd"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  MrdReader h5(dir / "rec.h5");
  const Parsed p = parse_stream_file(dir / "rec.mrd");
  ASSERT_GE(p.ids.size(), 2u);
  EXPECT_EQ(p.ids.front(), 3);  // the header first
  EXPECT_EQ(p.ids.back(), 4);   // the close last
  EXPECT_EQ(p.xml, h5.xml());
  ASSERT_EQ(p.acquisitions.size(), 96u);
  MrdReader mrd(dir / "rec.mrd");
  ASSERT_EQ(mrd.count(), 96u);
  for (std::size_t i = 0; i < 96; ++i) {
    EXPECT_EQ(p.acquisitions[i], bytes_of(h5.read(i))) << i;
    EXPECT_EQ(bytes_of(mrd.read(i)), bytes_of(h5.read(i))) << i;
  }
  const auto a = test::run_command(bin + " recon --input " + (dir / "rec.mrd") +
                                   " --start 32 --count 32 --threads 1 --out " + (dir / "a.cfl"));
  const auto b = test::run_command(bin + " recon --input " + (dir / "rec.h5") +
                                   " --start 32 --count 32 --threads 1 --out " + (dir / "b.cfl"));
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  // The same spokes reconstruct the same (FFTW may plan differently from one run to the next: float
  // rounding).
  const CflArray ia = read_cfl(dir / "a"), ib = read_cfl(dir / "b");
  ASSERT_EQ(ia.data.size(), ib.data.size());
  double e = 0, n = 0;
  for (std::size_t i = 0; i < ia.data.size(); ++i) {
    e += std::norm(ia.data[i] - ib.data[i]);
    n += std::norm(ib.data[i]);
  }
  EXPECT_LE(std::sqrt(e / n), 1e-6);
  // And back: the stream file into HDF5 again, the same acquisitions.
  ASSERT_EQ(test::run_command(bin + " convert --input " + (dir / "rec.mrd") + " --out " + (dir / "back.h5"))
                .exit_code,
            0);
  MrdReader back(dir / "back.h5");
  ASSERT_EQ(back.count(), 96u);
  EXPECT_EQ(bytes_of(back.read(95)), bytes_of(h5.read(95)));
}

TEST(MrdStreamFile, RunRecordsAStreamFileHeaderFirstCloseLast) {
  test::TempDir dir;
  const Registry reg = default_registry();
  RunConfig cfg = small_config(26186);
  cfg.sinks.record = dir / "live.mrd";
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 3;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 50);
  {
    StreamRuntime p(cfg, reg, make_protocol_servers);
    p.start();
    zmq::context_t ctx(1);
    SenderParams snd;
    snd.endpoint = cfg.stream.endpoint;
    Sender s(ctx, snd, 42);
    s.send_header(stream_header_to_xml(sim.header()));
    for (const auto& x : spokes) s.send_spoke(x);
    s.close();
    ASSERT_TRUE(eventually([&] { return p.metrics().recorded.load() == 50u; }));
    p.stop();
  }
  const Parsed p = parse_stream_file(dir / "live.mrd");
  ASSERT_FALSE(p.ids.empty());
  EXPECT_EQ(p.ids.front(), 3);
  EXPECT_EQ(p.ids.back(), 4);
  EXPECT_EQ(p.acquisitions.size(), 50u);
  EXPECT_EQ(stream_header_from_xml(p.xml, "live.mrd").matrix, 32);
  const MrdRecording rec = read_mrd(dir / "live.mrd");
  ASSERT_EQ(rec.spokes.size(), 50u);
  EXPECT_EQ(rec.spokes[49].data, spokes[49].data);
  EXPECT_EQ(rec.spokes[49].traj, spokes[49].traj);
  // Cut short (a killed recorder): the whole acquisitions before the cut are read, with a warning.
  const auto size = std::filesystem::file_size(dir / "live.mrd");
  std::filesystem::copy_file(dir / "live.mrd", dir / "torn.mrd");
  std::filesystem::resize_file(dir / "torn.mrd", size - 2 - 1000);  // the close and part of the last one
  MrdReader torn(dir / "torn.mrd");
  EXPECT_EQ(torn.count(), 49u);
}

// A writer closed without a flush of its own keeps every acquisition it buffered (it lost them all before:
// `convert --traj --kspace --out F.mrd` wrote a header and a close).
TEST(MrdStreamFile, AWriterClosedWithoutAFlushKeepsEveryAcquisition) {
  test::TempDir dir;
  const Simulator sim(SimParams{});
  const auto spokes = sim.spokes(0, 5);
  {
    MrdWriter w(dir / "few.mrd", sim.header());
    for (const Spoke& s : spokes) w.append(s);
  }
  const Parsed p = parse_stream_file(dir / "few.mrd");
  EXPECT_EQ(p.acquisitions.size(), 5u);
  ASSERT_FALSE(p.ids.empty());
  EXPECT_EQ(p.ids.front(), 3);
  EXPECT_EQ(p.ids.back(), 4);
  const MrdRecording back = read_mrd(dir / "few.mrd");
  ASSERT_EQ(back.spokes.size(), 5u);
  EXPECT_EQ(back.spokes[4].data, spokes[4].data);
}

TEST(MrdStreamFile, TheFormatIsToldByTheFirstBytes) {
  test::TempDir dir;
  std::ofstream(dir / "v2.mrd", std::ios::binary) << "yardl" << std::string(8, '\1');
  std::ofstream(dir / "junk.mrd", std::ios::binary) << "not an MRD file at all";
  try {
    MrdReader r(dir / "v2.mrd");
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("MRD v2"), std::string::npos) << e.what();
  }
  try {
    MrdReader r(dir / "junk.mrd");
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not an HDF5 (MRD) file, nor an MRD stream file"), std::string::npos)
        << e.what();
  }
  // An HDF5 recording named .mrd (as older converters name them) is read as HDF5.
  const std::string bin = test::radstream_binary();
  ASSERT_EQ(test::run_command(bin + " simulate --out " + (dir / "a.h5") + " --spokes 8 --matrix 16 --coils 2")
                .exit_code,
            0);
  std::filesystem::copy_file(dir / "a.h5", dir / "old.mrd");
  EXPECT_EQ(sniff_mrd_file(dir / "old.mrd"), MrdFileKind::Hdf5);
  EXPECT_EQ(MrdReader(dir / "old.mrd").count(), 8u);
}

// Every XML header radstream writes (recordings, convert, the simulator) is valid against ISMRMRD's schema
// (the ismrmrd-schema package's ismrmrd.xsd, checked by xmllint).
TEST(MrdXml, EveryHeaderRadstreamWritesIsValidAgainstTheSchema) {
  const std::string xsd = "/usr/share/ismrmrd/schema/ismrmrd.xsd";
  if (!std::filesystem::exists(xsd) || test::run_command("xmllint --version").exit_code != 0) {
    if (test::env_flag("RADSTREAM_REQUIRE_BART"))
      FAIL() << "ismrmrd-schema or libxml2-utils is not installed";
    GTEST_SKIP() << "needs ismrmrd-schema and libxml2-utils (scripts/setup.sh installs them)";
  }
  test::TempDir dir;
  std::vector<StreamHeader> headers(4);
  headers[1].angles.scheme = AngleScheme::TinyGolden;
  headers[1].angles.tiny_n = 7;
  headers[2].angles.scheme = AngleScheme::Turns;
  headers[2].angles.turns = 5;
  headers[2].angles.spokes_per_rotation = 13;
  headers[3].angles.scheme = AngleScheme::Linear360;
  headers[3].spoke_rate_hz = 400;
  headers[3].coils = 32;
  headers[3].matrix = 192;
  headers[3].samples = 384;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const std::string path = dir / fmt::format("h{}.xml", i);
    std::ofstream(path) << stream_header_to_xml(headers[i]);
    const auto r = test::run_command("xmllint --noout --schema " + xsd + " " + path);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("validates"), std::string::npos) << r.output;
  }
}
