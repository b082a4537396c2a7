// MRD 2 files (io/mrd2_file.hpp) and the yardl binary encoding under them: the encoding against the worked
// example of yardl's binary-encoding reference, byte for byte; MRD v1 -> MRD 2 -> MRD v1 keeping every
// acquisition byte for byte (a simulated recording and the real cardiac data); a written MRD 2 file parsed
// field by field by the schema it carries; the header's v1 XML and MRD 2 record both ways; files of other
// releases, cut short or lying about lengths refused or read up to what they hold.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "ingest/protocols.hpp"
#include "io/mrd2_file.hpp"
#include "io/mrd2_header.hpp"
#include "io/mrd2_schema.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_reader.hpp"
#include "io/yardl_schema.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/sender.hpp"

using namespace radstream;
using namespace radstream::streamtest;
using nlohmann::json;

namespace {

std::vector<unsigned char> encode(const yardl::Schema& s, const json& type, const yardl::Value& v) {
  std::vector<std::byte> b;
  yardl::Output out(b);
  s.write(type, v, out);
  std::vector<unsigned char> u(b.size());
  std::memcpy(u.data(), b.data(), b.size());
  return u;
}

std::vector<unsigned char> bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void run_ok(const std::string& args) {
  const auto r = test::run_command(test::radstream_binary() + " " + args);
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.output;
}

// Every acquisition of two MRD files, compared byte for byte (the 340 header bytes, trajectory, data).
void expect_same_acquisitions(const std::string& a, const std::string& b, std::size_t n) {
  MrdReader ra(a), rb(b);
  ASSERT_EQ(ra.count(), n);
  ASSERT_EQ(rb.count(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const RawSpoke x = ra.read(i), y = rb.read(i);
    ASSERT_EQ(std::memcmp(x.acq_header.data(), y.acq_header.data(), 340), 0) << "acquisition " << i;
    ASSERT_EQ(x.traj, y.traj) << "acquisition " << i;
    ASSERT_EQ(x.data.size(), y.data.size());
    ASSERT_EQ(std::memcmp(x.data.data(), y.data.data(), x.data.size() * sizeof(cfloat)), 0) << i;
  }
}

}  // namespace

TEST(Yardl, VarintsAndZigZagAreTheReferencesTables) {
  const yardl::Schema s(R"({"protocol":{"name":"P","sequence":[]},"types":[]})", "test");
  EXPECT_EQ(encode(s, "uint64", 0), (std::vector<unsigned char>{0x00}));
  EXPECT_EQ(encode(s, "uint64", 127), (std::vector<unsigned char>{0x7f}));
  EXPECT_EQ(encode(s, "uint64", 128), (std::vector<unsigned char>{0x80, 0x01}));
  EXPECT_EQ(encode(s, "uint64", 129), (std::vector<unsigned char>{0x81, 0x01}));
  for (auto [v, z] : {std::pair{0, 0}, {-1, 1}, {1, 2}, {-2, 3}, {2, 4}})
    EXPECT_EQ(yardl::zigzag(v), std::uint64_t(z));
  EXPECT_EQ(encode(s, "string", "hello"), (std::vector<unsigned char>{0x05, 'h', 'e', 'l', 'l', 'o'}));
  // The union [null, uint, float] of the reference's table.
  const json u =
      json::parse(R"([null, {"tag":"uint32","type":"uint32"}, {"tag":"float32","type":"float32"}])");
  EXPECT_EQ(encode(s, u, nullptr), (std::vector<unsigned char>{0x00}));
  EXPECT_EQ(encode(s, u, yardl::Value{{"uint32", 6}}), (std::vector<unsigned char>{0x01, 0x06}));
  EXPECT_EQ(encode(s, u, yardl::Value{{"float32", 95.72f}}),
            (std::vector<unsigned char>{0x02, 0xa4, 0x70, 0xbf, 0x42}));
}

TEST(Yardl, TheReferencesWorkedExampleEncodesToItsBytes) {
  // yardl's binary-encoding reference: float[2,2] {{1.2, 3.4}, {5.6, 7.8}}, then a stream of Points
  // {x: uint64, y: int32} in blocks of 3 and 2 and the end.
  const yardl::Schema s(
      R"({"protocol":{"name":"MyProtocol","sequence":[{"name":"floatArray","type":{"array":{"items":"float32",
      "dimensions":[{"length":2},{"length":2}]}}},{"name":"points","type":{"stream":{"items":"Sandbox.Point"}}}]},
      "types":[{"name":"Point","fields":[{"name":"x","type":"uint64"},{"name":"y","type":"int32"}]}]})",
      "test");
  std::vector<std::byte> b;
  yardl::Output out(b);
  s.write(s.step_type("floatArray"), yardl::Value{{"dims", {2, 2}}, {"data", {1.2f, 3.4f, 5.6f, 7.8f}}}, out);
  const auto point = [](std::uint64_t x, std::int64_t y) { return yardl::Value{{"x", x}, {"y", y}}; };
  out.varint(3);
  for (auto p : {point(1, 2), point(3, 4), point(5, 6)}) s.write(s.step_type("points"), p, out);
  out.varint(2);
  for (auto p : {point(700, 800), point(800000, -900000)}) s.write(s.step_type("points"), p, out);
  out.varint(0);
  const std::vector<unsigned char> want{0x9a, 0x99, 0x99, 0x3f, 0x9a, 0x99, 0x59, 0x40, 0x33,
                                        0x33, 0xb3, 0x40, 0x9a, 0x99, 0xf9, 0x40, 0x03, 0x01,
                                        0x04, 0x03, 0x08, 0x05, 0x0c, 0x02, 0xbc, 0x05, 0xc0,
                                        0x0c, 0x80, 0xea, 0x30, 0xbf, 0xee, 0x6d, 0x00};
  ASSERT_EQ(b.size(), want.size());
  EXPECT_EQ(std::memcmp(b.data(), want.data(), want.size()), 0);
}

TEST(Mrd2File, V1ToV2ToV1KeepsEveryAcquisitionByteForByte) {
  test::TempDir dir;
  run_ok("simulate --out " + (dir / "a.h5") + " --spokes 30 --matrix 32 --coils 4");
  run_ok("convert --input " + (dir / "a.h5") + " --out " + (dir / "a.mrd2"));
  run_ok("convert --input " + (dir / "a.mrd2") + " --out " + (dir / "b.h5"));
  run_ok("convert --input " + (dir / "a.mrd2") + " --out " + (dir / "b.mrd"));
  expect_same_acquisitions(dir / "a.h5", dir / "a.mrd2", 30);
  expect_same_acquisitions(dir / "a.h5", dir / "b.h5", 30);
  expect_same_acquisitions(dir / "a.h5", dir / "b.mrd", 30);
  // Written again from its own reading, an MRD 2 file is the same file (the header as well).
  run_ok("convert --input " + (dir / "a.mrd2") + " --out " + (dir / "c.mrd2"));
  EXPECT_EQ(bytes(dir / "a.mrd2"), bytes(dir / "c.mrd2"));
}

TEST(Mrd2File, TheRealCardiacDataGoesBothWaysAndReconstructsTheSame) {
  RADSTREAM_REQUIRE_REAL_DATA("cardiac-25spokes-12coils");
  test::TempDir dir;
  const std::string d = test::real_data("cardiac-25spokes-12coils").string();
  run_ok("convert --traj " + d + "/traj --kspace " + d + "/ksp --matrix 256 --out " + (dir / "c.mrd"));
  run_ok("convert --input " + (dir / "c.mrd") + " --out " + (dir / "c.mrd2"));
  run_ok("convert --input " + (dir / "c.mrd2") + " --out " + (dir / "back.h5"));
  expect_same_acquisitions(dir / "c.mrd", dir / "back.h5", 25);
  run_ok("recon --input " + (dir / "c.mrd") + " --matrix 256 --out " + (dir / "v1.cfl"));
  run_ok("recon --input " + (dir / "c.mrd2") + " --matrix 256 --out " + (dir / "v2.cfl"));
  EXPECT_EQ(bytes(dir / "v1.cfl"), bytes(dir / "v2.cfl"));
}

TEST(Mrd2File, AWrittenFileParsesFieldByFieldAgainstTheSchemaItCarries) {
  test::TempDir dir;
  run_ok("simulate --out " + (dir / "a.h5") + " --spokes 12 --matrix 16 --coils 3");
  run_ok("convert --input " + (dir / "a.h5") + " --out " + (dir / "a.mrd2"));
  std::FILE* f = std::fopen((dir / "a.mrd2").c_str(), "rb");
  ASSERT_TRUE(f);
  yardl::Input in(f, "a.mrd2");
  char magic[5];
  std::uint32_t version = 0;
  in.read(magic, 5);
  in.read(&version, 4);
  EXPECT_EQ(std::string(magic, 5), "yardl");
  EXPECT_EQ(version, 1u);
  const std::string text = in.string();
  EXPECT_EQ(mrd2::schema_release(text), "2.2.1");
  const yardl::Schema s(text, "the file's schema");  // the generic codec, not the typed fast path
  const yardl::Value header = s.read(s.step_type("header"), in);
  MrdReader v1(dir / "a.h5");
  EXPECT_EQ(header, mrd2::header_from_xml(s, v1.xml(), "a.h5"));
  EXPECT_EQ(header["encoding"][0]["trajectory"], "goldenangle");
  EXPECT_EQ(header["encoding"][0]["reconSpace"]["matrixSize"]["x"], 16);
  std::size_t n = 0;
  for (std::uint64_t block = in.varint(); block > 0; block = in.varint()) {
    for (std::uint64_t k = 0; k < block; ++k, ++n) {
      const yardl::Value item = s.read(s.step_type("data"), in);
      ASSERT_TRUE(item.contains("acquisition")) << item.dump().substr(0, 200);
      const yardl::Value& a = item["acquisition"];
      const RawSpoke r = v1.read(n);
      ISMRMRD::ISMRMRD_AcquisitionHeader h;
      std::memcpy(&h, r.acq_header.data(), sizeof h);
      EXPECT_EQ(a["head"]["idx"]["kspaceEncodeStep1"], h.idx.kspace_encode_step_1);
      EXPECT_EQ(a["head"]["scanCounter"], h.scan_counter);
      EXPECT_EQ(a["head"]["acquisitionTimeStampNs"], std::uint64_t(h.acquisition_time_stamp) * 1000000);
      ASSERT_EQ(a["head"]["userInt"].size(), 8u);
      for (int u = 0; u < 8; ++u) EXPECT_EQ(a["head"]["userInt"][u], h.user_int[u]);
      EXPECT_EQ(a["head"]["userFloat"][0], h.user_float[0]);
      EXPECT_EQ(a["data"]["dims"], json::array({3, h.number_of_samples}));
      EXPECT_EQ(a["trajectory"]["dims"], json::array({2, h.number_of_samples}));
      for (std::size_t smp : {std::size_t(0), std::size_t(h.number_of_samples - 1)}) {
        EXPECT_EQ(a["trajectory"]["data"][smp], r.traj[smp * 2]);  // kx: [basis][samples] <- [samples][basis]
        EXPECT_EQ(a["trajectory"]["data"][h.number_of_samples + smp], r.traj[smp * 2 + 1]);
        EXPECT_EQ(a["data"]["data"][smp][0], r.data[smp].real());
      }
      EXPECT_TRUE(a["phase"].is_null());
    }
  }
  EXPECT_EQ(n, 12u);
  EXPECT_TRUE(in.at_end());  // the stream's end block is the file's last byte
  std::fclose(f);
}

TEST(Mrd2Header, EveryKindOfFieldGoesFromV1XmlToMrd2AndBack) {
  const yardl::Schema s(mrd2::schema_text(), "MRD 2.2.1");
  const std::string xml = R"(<?xml version="1.0"?>
<ismrmrdHeader xmlns="http://www.ismrm.org/ISMRMRD">
  <version>2</version>
  <subjectInformation><patientName>Doe^J</patientName><patientWeight_kg>72.5</patientWeight_kg>
    <patientBirthdate>1980-02-29</patientBirthdate><patientGender>F</patientGender></subjectInformation>
  <studyInformation><studyDate>2026-11-29</studyDate><studyTime>13:45:07.25</studyTime></studyInformation>
  <measurementInformation><measurementID>45_1_2</measurementID><patientPosition>HFS</patientPosition>
    <protocolName>rt_radial</protocolName></measurementInformation>
  <acquisitionSystemInformation><systemVendor>SIEMENS</systemVendor><systemFieldStrength_T>2.89362</systemFieldStrength_T>
    <receiverChannels>12</receiverChannels><coilLabel><coilNumber>1</coilNumber><coilName>H1</coilName></coilLabel>
    <coilLabel><coilNumber>2</coilNumber><coilName>H2</coilName></coilLabel></acquisitionSystemInformation>
  <experimentalConditions><H1resonanceFrequency_Hz>123255199</H1resonanceFrequency_Hz></experimentalConditions>
  <encoding>
    <encodedSpace><matrixSize><x>512</x><y>256</y><z>1</z></matrixSize>
      <fieldOfView_mm><x>600</x><y>300</y><z>6</z></fieldOfView_mm></encodedSpace>
    <reconSpace><matrixSize><x>256</x><y>256</y><z>1</z></matrixSize>
      <fieldOfView_mm><x>300</x><y>300</y><z>6</z></fieldOfView_mm></reconSpace>
    <encodingLimits><kspace_encoding_step_1><minimum>0</minimum><maximum>24</maximum><center>0</center></kspace_encoding_step_1>
      <user_3><minimum>1</minimum><maximum>2</maximum><center>1</center></user_3></encodingLimits>
    <trajectory>radial</trajectory>
    <parallelImaging><accelerationFactor><kspace_encoding_step_1>1</kspace_encoding_step_1>
      <kspace_encoding_step_2>1</kspace_encoding_step_2></accelerationFactor><calibrationMode>other</calibrationMode></parallelImaging>
  </encoding>
  <sequenceParameters><TR>2.2</TR><TR>3.5</TR><TE>1.4</TE><flipAngle_deg>8</flipAngle_deg></sequenceParameters>
  <userParameters><userParameterLong><name>n</name><value>-3</value></userParameterLong>
    <userParameterDouble><name>d</name><value>0.125</value></userParameterDouble></userParameters>
</ismrmrdHeader>)";
  const yardl::Value h = mrd2::header_from_xml(s, xml, "test");
  EXPECT_EQ(h["version"], 2);
  EXPECT_EQ(h["subjectInformation"]["patientGender"], "f");
  EXPECT_EQ(h["subjectInformation"]["patientBirthdate"], 3711);  // days from 1970-01-01 to 1980-02-29
  EXPECT_EQ(h["studyInformation"]["studyTime"], std::int64_t(49507250000000));
  EXPECT_EQ(h["measurementInformation"]["patientPosition"], "hFS");
  EXPECT_EQ(h["acquisitionSystemInformation"]["coilLabel"].size(), 2u);
  EXPECT_FLOAT_EQ(h["acquisitionSystemInformation"]["systemFieldStrengthT"].get<float>(), 2.89362f);
  EXPECT_EQ(h["encoding"][0]["encodingLimits"]["user3"]["maximum"], 2);
  EXPECT_TRUE(h["encoding"][0]["encodingLimits"]["kspaceEncodingStep2"].is_null());
  EXPECT_EQ(h["encoding"][0]["trajectory"], "radial");
  EXPECT_EQ(h["sequenceParameters"]["tR"].size(), 2u);
  EXPECT_EQ(h["userParameters"]["userParameterLong"][0]["value"], -3);
  // Encoded, decoded and written as XML again: the same record, and XML's spellings back.
  std::vector<std::byte> b;
  yardl::Output out(b);
  s.write("Mrd.Header", h, out);
  const std::string path = (std::filesystem::temp_directory_path() / "radstream_mrd2_header.bin").string();
  std::FILE* f = std::fopen(path.c_str(), "w+b");
  ASSERT_TRUE(f);
  std::fwrite(b.data(), 1, b.size(), f);
  std::fflush(f);
  yardl::Input in(f, path);
  EXPECT_EQ(s.read("Mrd.Header", in), h);
  EXPECT_TRUE(in.at_end());
  std::fclose(f);
  std::filesystem::remove(path);
  const std::string back = mrd2::header_to_xml(s, h);
  for (const char* want :
       {"<patientPosition>HFS</patientPosition>", "<patientGender>F</patientGender>",
        "<studyTime>13:45:07.250000000</studyTime>", "<patientBirthdate>1980-02-29</patientBirthdate>",
        "<user_3>", "<TR>2.2</TR>", "<fieldOfView_mm>", "<H1resonanceFrequency_Hz>"})
    EXPECT_NE(back.find(want), std::string::npos) << want << "\n" << back;
  EXPECT_EQ(mrd2::header_from_xml(s, back, "again"), h);
  // A field MRD 2 requires is named when the XML lacks it.
  try {
    mrd2::header_from_xml(s, R"(<ismrmrdHeader><encoding/></ismrmrdHeader>)", "bad.xml");
    ADD_FAILURE();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("experimentalConditions"), std::string::npos) << e.what();
  }
}

TEST(Mrd2File, OtherSchemasCutFilesAndFalseLengthsAreRefusedOrReadAsFarAsTheyHold) {
  test::TempDir dir;
  run_ok("simulate --out " + (dir / "a.h5") + " --spokes 10 --matrix 16 --coils 2");
  run_ok("convert --input " + (dir / "a.h5") + " --out " + (dir / "a.mrd2"));
  const std::vector<unsigned char> good = bytes(dir / "a.mrd2");
  const auto write = [&](const std::string& name, const std::vector<unsigned char>& b) {
    std::ofstream(dir / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), long(b.size()));
    return dir / name;
  };
  const auto refused = [](const std::string& path) -> std::string {
    try {
      MrdReader r(path);
    } catch (const IoError& e) {
      return e.what();
    }
    return "";
  };
  // Another schema (one character changed): refused, not misread.
  std::vector<unsigned char> other = good;
  other[9 + 2 + 20] ^= 0x20;
  EXPECT_NE(refused(write("other.mrd2", other)).find("not MRD 2.2.1's"), std::string::npos);
  EXPECT_EQ(mrd2::schema_release(mrd2::schema_text()), "2.2.1");
  // Cut inside the 7th acquisition: the 6 before it are read.
  run_ok("simulate --out " + (dir / "b.h5") + " --spokes 9 --matrix 16 --coils 2");
  run_ok("convert --input " + (dir / "b.h5") + " --out " + (dir / "b.mrd2"));
  const std::size_t per = good.size() - bytes(dir / "b.mrd2").size();  // one acquisition's bytes
  ASSERT_GT(per, 700u);
  std::vector<unsigned char> cut(good.begin(), good.end() - std::ptrdiff_t(3 * per + per / 2 + 1));
  MrdReader r(write("cut.mrd2", cut));
  EXPECT_EQ(r.count(), 6u);
  EXPECT_EQ(r.read(5).data, MrdReader(dir / "a.mrd2").read(5).data);
  // A block that declares more items than the file can hold.
  std::vector<unsigned char> liar(good.begin(), good.end() - 1);  // without the end block
  for (unsigned char c : {0xff, 0xff, 0xff, 0xff, 0x0f}) liar.push_back(c);
  MrdReader l(write("liar.mrd2", liar));  // the acquisitions before it stand; the lie reads as a cut file
  EXPECT_EQ(l.count(), 10u);
}

TEST(Mrd2File, RunRecordsAnMrd2FileThatReadsBackEverySpoke) {
  test::TempDir dir;
  const Registry reg = default_registry();
  RunConfig cfg = small_config(27013);
  cfg.sinks.record = dir / "live.mrd2";
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 3;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 40);
  {
    StreamRuntime p(cfg, reg, make_protocol_servers);
    p.start();
    zmq::context_t ctx(1);
    SenderParams snd;
    snd.endpoint = cfg.stream.endpoint;
    Sender s(ctx, snd, 43);
    s.send_header(stream_header_to_xml(sim.header()));
    for (const auto& x : spokes) s.send_spoke(x);
    s.close();
    ASSERT_TRUE(eventually([&] { return p.metrics().recorded.load() == 40u; }));
    p.stop();
  }
  const MrdRecording rec = read_mrd(dir / "live.mrd2");
  ASSERT_EQ(rec.spokes.size(), 40u);
  EXPECT_EQ(rec.header.matrix, 32);
  EXPECT_EQ(rec.spokes[39].data, spokes[39].data);
  EXPECT_EQ(rec.spokes[39].traj, spokes[39].traj);
  EXPECT_EQ(rec.spokes[39].header.spoke_index, spokes[39].header.spoke_index);
}

TEST(Mrd2File, ImagesAnMrdServerSendsBackAreStoredAsMrd2ImagesEqualToTheHdf5Ones) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  run_ok("simulate --out " + (dir / "rec.h5") + " --spokes 96 --matrix 32 --coils 3 --snr 30");
  const std::string server = bin + " run --headless --endpoint tcp://127.0.0.1:27085 --mrd-listen " +
                             "tcp://127.0.0.1:27086 --duration 20 --mrd-config-dir " + RADSTREAM_CONFIG_DIR +
                             " --window 32 --stride 16 --no-skip --images \"\" --mrd-pixels float > " +
                             (dir / "run.log") + " 2>&1 & pid=$!; sleep 1.5; ";
  const std::string replay =
      bin + " replay " + (dir / "rec.h5") + " --mrd tcp://127.0.0.1:27086 --config gridding --speed max ";
  // The HDF5 copy from the server's first session (its images in series 1), the MRD 2 one from the second.
  const auto r = test::run_command("(" + server + replay + "--images-out " + (dir / "back.h5") + " && " +
                                   replay + "--images-out " + (dir / "back.mrd2") +
                                   "; rc=$?; kill -INT $pid; wait $pid; exit $rc)");
  ASSERT_EQ(r.exit_code, 0) << r.output;

  std::FILE* f = std::fopen((dir / "back.mrd2").c_str(), "rb");
  ASSERT_TRUE(f);
  yardl::Input in(f, "back.mrd2");
  in.skip(9);
  const yardl::Schema s(in.string(), "back.mrd2");
  const yardl::Value header = s.read(s.step_type("header"), in);
  EXPECT_EQ(header["encoding"][0]["reconSpace"]["matrixSize"]["x"],
            32);  // the scan's header heads the images
  ISMRMRD::Dataset d((dir / "back.h5").c_str(), "dataset", false);
  ASSERT_EQ(d.getNumberOfImages("images_1"), 5u);  // (96 - 32) / 16 + 1
  unsigned n = 0;
  for (std::uint64_t block = in.varint(); block > 0; block = in.varint()) {
    for (std::uint64_t k = 0; k < block; ++k, ++n) {
      const yardl::Value item = s.read(s.step_type("data"), in);
      ASSERT_TRUE(item.contains("imageFloat")) << item.dump().substr(0, 200);
      const yardl::Value& im = item["imageFloat"];
      ISMRMRD::Image<float> ref;
      d.readImage("images_1", n, ref);
      EXPECT_EQ(im["data"]["dims"], json::array({1, 1, 32, 32}));
      ASSERT_EQ(im["data"]["data"].size(), 32u * 32u);
      for (std::size_t p = 0; p < 32 * 32; ++p)
        ASSERT_EQ(im["data"]["data"][p].get<float>(), ref.getDataPtr()[p]) << p;
      EXPECT_EQ(im["head"]["imageIndex"], ref.getImageIndex());
      EXPECT_EQ(im["head"]["imageType"], "magnitude");
      bool role = false;
      for (const auto& kv : im["meta"]) role = role || (kv[0] == "DataRole" && kv[1][0]["string"] == "Image");
      EXPECT_TRUE(role) << im["meta"].dump();
    }
  }
  EXPECT_EQ(n, 5u);
  EXPECT_TRUE(in.at_end());
  std::fclose(f);
}
