#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "io/cfl.hpp"
#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

using namespace radstream;

TEST(Cfl, RoundTrip) {
  test::TempDir dir;
  std::vector<cfloat> v(6 * 5);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = cfloat(float(i), -float(i));
  write_cfl(dir / "a", {6, 5}, v);
  const auto a = read_cfl(dir / "a.cfl");
  EXPECT_EQ(a.dim(0), 6);
  EXPECT_EQ(a.dim(1), 5);
  EXPECT_EQ(a.dim(2), 1);
  EXPECT_EQ(a.data, v);
}

TEST(Cfl, TruncatedDataNamesFileAndSizes) {
  test::TempDir dir;
  std::vector<cfloat> v(100);
  write_cfl(dir / "t", {10, 10}, v);
  std::filesystem::resize_file(dir / "t.cfl", 400);
  try {
    read_cfl(dir / "t");
    FAIL();
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("t.cfl"), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
}

TEST(Cfl, AbsurdDimensionsAreRejectedBeforeAnyAllocation) {
  test::TempDir dir;
  for (const char* dims : {"1000000 1000000 1000000", "-3 4", "4 x", ""}) {
    std::ofstream(dir / "h.hdr") << "# Dimensions\n" << dims << "\n";
    std::ofstream(dir / "h.cfl") << "";
    EXPECT_THROW(read_cfl(dir / "h"), IoError) << dims;
  }
  EXPECT_THROW(read_cfl(dir / "missing"), IoError);
}

TEST(Mrd, RoundTripKeepsSpokesAndHeader) {
  test::TempDir dir;
  SimParams p;
  p.matrix = 32;
  p.coils = 3;
  p.angles = "tiny-golden";
  p.tiny_n = 7;
  p.snr = 20;
  const Simulator sim(p);
  {
    MrdWriter w(dir / "r.h5", sim.header());
    for (const auto& s : sim.spokes(0, 10)) w.append(s);
  }
  const auto rec = read_mrd(dir / "r.h5");
  EXPECT_EQ(rec.header.matrix, 32);
  EXPECT_EQ(rec.header.samples, 64);
  EXPECT_EQ(rec.header.coils, 3);
  EXPECT_EQ(rec.header.angles.scheme, AngleScheme::TinyGolden);
  EXPECT_EQ(rec.header.angles.tiny_n, 7);
  EXPECT_FLOAT_EQ(rec.header.readout_os, 2.f);
  ASSERT_EQ(rec.spokes.size(), 10u);
  const auto orig = sim.spoke(9);
  EXPECT_EQ(rec.spokes[9].data, orig.data);
  EXPECT_EQ(rec.spokes[9].traj, orig.traj);
  EXPECT_EQ(rec.spokes[9].header.spoke_index, 9u);
  EXPECT_EQ(rec.spokes[9].header.acquired_ns, orig.header.acquired_ns);
  EXPECT_NEAR(rec.spokes[9].header.angle, orig.header.angle, 1e-6);
  const auto part = read_mrd(dir / "r.h5", 4, 3);
  ASSERT_EQ(part.spokes.size(), 3u);
  EXPECT_EQ(part.spokes[0].header.spoke_index, 4u);
}

TEST(Mrd, NotHdf5AndMissingFilesAreClearErrors) {
  test::TempDir dir;
  std::ofstream(dir / "x.h5") << "hello";
  EXPECT_THROW(read_mrd(dir / "x.h5"), IoError);
  EXPECT_THROW(read_mrd(dir / "none.h5"), IoError);
}
