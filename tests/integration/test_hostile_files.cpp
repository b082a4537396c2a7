// Hostile and unlucky input files through the real program: IMPATIENT folders whose files disagree with
// their headers or hold no values (the empty kx.dat used to crash `recon --method fhd` with SIGFPE, exit
// 136), non-finite values in IMPATIENT and BART .cfl inputs on every path (they used to give an all-NaN image
// and exit 0), and headers that are links to /dev/zero or FIFOs (they used to be read without end). Each is
// refused with exit 3 and a message naming the file, at once.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "io/cfl.hpp"
#include "test_util.hpp"

using namespace radstream;
namespace fs = std::filesystem;

namespace {

test::CommandResult radstream_cmd(const std::string& args) {
  return test::run_command("timeout 30 " + test::radstream_binary() + " " + args);
}

void expect_refused(const test::CommandResult& r, const std::string& needle,
                    const std::string& needle2 = "") {
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << r.output;
  if (!needle2.empty()) {
    EXPECT_NE(r.output.find(needle2), std::string::npos) << "missing '" << needle2 << "' in:\n" << r.output;
  }
}

// A version 0.2 IMPATIENT file: float32 0.2, int32 rows, coils, slices, rows again, then the values. `extra`
// values beyond the header's count make a file whose size disagrees with it.
void write_v02(const fs::path& p, std::vector<float> v, int coils = 1, int extra = 0) {
  const std::int32_t rows = std::int32_t(v.size() / std::size_t(coils)), c = coils, s = 1;
  for (int i = 0; i < extra; ++i) v.push_back(0.f);
  std::ofstream f(p, std::ios::binary);
  const float version = 0.2f;
  f.write(reinterpret_cast<const char*>(&version), 4);
  for (std::int32_t x : {rows, c, s, rows}) f.write(reinterpret_cast<const char*>(&x), 4);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
}

// A small spiral-free case: 48 samples on a radial star, a 4 x 4 image, one coil.
void write_case(const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<float> kx, ky, kr, ki, ix, iy;
  for (int j = 0; j < 48; ++j) {
    const double a = 3.14159265 * (j % 6) / 6, r = -2.0 + 4.0 * (j / 6) / 7.0;
    kx.push_back(float(r * std::cos(a) / 4));
    ky.push_back(float(r * std::sin(a) / 4));
    kr.push_back(float(std::cos(0.3 * j)));
    ki.push_back(float(std::sin(0.2 * j)));
  }
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      ix.push_back(float(x - 2) / 4.f);
      iy.push_back(float(y - 2) / 4.f);
    }
  write_v02(dir / "kx.dat", kx);
  write_v02(dir / "ky.dat", ky);
  write_v02(dir / "kdata_r.dat", kr);
  write_v02(dir / "kdata_i.dat", ki);
  write_v02(dir / "ix.dat", ix);
  write_v02(dir / "iy.dat", iy);
}

}  // namespace

TEST(HostileFiles, ImpatientFilesThatDisagreeWithTheirHeadersOrHoldNoValuesAreRefusedByName) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "case";
  write_case(dir);
  const std::string fhd = "recon --method fhd --backend cpu --impatient " + dir.string() + " --out " +
                          (fs::path(tmp.path()) / "x.cfl").string();
  const auto good = radstream_cmd(fhd);
  ASSERT_EQ(good.exit_code, 0) << good.output;
  // kx.dat with no values (rows 0): the folder has no samples.
  write_v02(dir / "kx.dat", {});
  expect_refused(radstream_cmd(fhd), "kx.dat", "no values");
  expect_refused(radstream_cmd("recon --method cg-exact --backend cpu --impatient " + dir.string() +
                               " --out " + (fs::path(tmp.path()) / "y.cfl").string()),
                 "kx.dat", "no values");
  write_case(dir);
  // A file longer than its header says, and one shorter.
  write_v02(dir / "ky.dat", std::vector<float>(48, 0.f), 1, 3);
  expect_refused(radstream_cmd(fhd), "ky.dat", "its header");
  write_case(dir);
  {
    std::vector<float> iy(15, 0.f);
    write_v02(dir / "iy.dat", iy);
  }
  expect_refused(radstream_cmd(fhd), "iy.dat", "expected");
  write_case(dir);
  // Empty image grid.
  write_v02(dir / "ix.dat", {});
  expect_refused(radstream_cmd(fhd), "ix.dat", "no values");
}

TEST(HostileFiles, NonFiniteValuesAreAnErrorNamingTheFileAndIndexOnEveryPath) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "case";
  write_case(dir);
  std::vector<float> kr(48, 1.f);
  kr[7] = std::numeric_limits<float>::quiet_NaN();
  write_v02(dir / "kdata_r.dat", kr);
  for (const char* m : {"fhd", "cg-exact"})
    expect_refused(radstream_cmd(std::string("recon --method ") + m + " --backend cpu --impatient " +
                                 dir.string() + " --out " + (fs::path(tmp.path()) / "x.cfl").string()),
                   "kdata_r.dat: value 7 is NaN or Inf");
  // A BART pair for the exact path and the NUFFT command, with one Inf in the k-space.
  const std::string t = (fs::path(tmp.path()) / "t").string(), k = (fs::path(tmp.path()) / "k").string();
  std::vector<cfloat> traj, ksp;
  for (int j = 0; j < 32; ++j) {
    traj.push_back(cfloat(float(j % 8) - 4.f, 0.f));
    traj.push_back(cfloat(float(j / 8) - 2.f, 0.f));
    traj.push_back(cfloat(0.f, 0.f));
    ksp.push_back(cfloat(1.f, 0.f));
  }
  write_cfl(t, {3, 8, 4}, traj);
  write_cfl(k, {1, 8, 4, 1}, ksp);
  const std::string exact = "recon --method fhd --backend cpu --matrix 8 --traj " + t + " --kspace " + k +
                            " --out " + (fs::path(tmp.path()) / "e.cfl").string();
  ASSERT_EQ(radstream_cmd(exact).exit_code, 0) << radstream_cmd(exact).output;
  const std::string nufft =
      "nufft --adjoint --dims 8:8 --traj " + t + " " + k + " " + (fs::path(tmp.path()) / "n").string();
  ASSERT_EQ(radstream_cmd(nufft).exit_code, 0) << radstream_cmd(nufft).output;
  ksp[13] = cfloat(0.f, std::numeric_limits<float>::infinity());
  write_cfl(k, {1, 8, 4, 1}, ksp);
  expect_refused(radstream_cmd(exact), "k.cfl: value 13 is NaN or Inf");
  expect_refused(radstream_cmd(nufft), "k.cfl: value 13 is NaN or Inf");
}

TEST(HostileFiles, HeadersThatAreDevicesOrFifosAreRefusedAtOnce) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "case";
  write_case(dir);
  const auto t0 = std::chrono::steady_clock::now();
  // An IMPATIENT file that is a link to /dev/zero, and one that is a FIFO nobody writes to.
  fs::remove(dir / "ix.dat");
  fs::create_symlink("/dev/zero", dir / "ix.dat");
  const std::string fhd = "recon --method fhd --backend cpu --impatient " + dir.string() + " --out " +
                          (fs::path(tmp.path()) / "x.cfl").string();
  expect_refused(radstream_cmd(fhd), "ix.dat", "not a regular file");
  fs::remove(dir / "ix.dat");
  ASSERT_EQ(mkfifo((dir / "ix.dat").c_str(), 0600), 0);
  expect_refused(radstream_cmd(fhd), "ix.dat", "not a regular file");
  // A BART header that is a link to /dev/zero (no newline ever), a FIFO, and one with no newline at all.
  const std::string base = (fs::path(tmp.path()) / "k").string();
  write_cfl(base, {1, 4, 2, 1}, std::vector<cfloat>(8, cfloat(1.f, 0.f)));
  const std::string traj = (fs::path(tmp.path()) / "t").string();
  write_cfl(traj, {3, 4, 2}, std::vector<cfloat>(24, cfloat(0.f, 0.f)));
  const std::string recon = "recon --backend cpu --matrix 8 --traj " + traj + " --kspace " + base +
                            " --out " + (fs::path(tmp.path()) / "r.cfl").string();
  fs::remove(base + ".hdr");
  fs::create_symlink("/dev/zero", base + ".hdr");
  expect_refused(radstream_cmd(recon), "k.hdr", "not a regular file");
  fs::remove(base + ".hdr");
  ASSERT_EQ(mkfifo((base + ".hdr").c_str(), 0600), 0);
  expect_refused(radstream_cmd(recon), "k.hdr", "not a regular file");
  fs::remove(base + ".hdr");
  {
    std::ofstream h(base + ".hdr");
    h << "# Dimensions";  // no newline, no dimensions
  }
  expect_refused(radstream_cmd(recon), "k.hdr", "Dimensions");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 20.0) << "a device or FIFO header was read until the time-out";
}

namespace {
// Adds `add_hi` to the high word of spoke i's recorded acquisition time (user_int[1]; radstream's envelope
// keeps the time in ns as user_int[0] + 2^32 user_int[1]) with an HDF5 partial compound write: the file
// now says its clock jumped there.
void forge_acquired_time(const std::string& path, std::size_t i, std::int32_t add_hi) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, "/dataset/data", H5P_DEFAULT);
  const hsize_t eight = 8;
  const hid_t arr = H5Tarray_create2(H5T_NATIVE_INT32, 1, &eight);
  const hid_t inner = H5Tcreate(H5T_COMPOUND, 8 * sizeof(std::int32_t));
  H5Tinsert(inner, "user_int", 0, arr);
  const hid_t outer = H5Tcreate(H5T_COMPOUND, 8 * sizeof(std::int32_t));
  H5Tinsert(outer, "head", 0, inner);
  const hid_t fs = H5Dget_space(d), ms = H5Screate(H5S_SCALAR);
  const hsize_t start = i, one = 1;
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &one, nullptr);
  std::int32_t u[8] = {};
  EXPECT_GE(H5Dread(d, outer, ms, fs, H5P_DEFAULT, u), 0);
  EXPECT_NE(u[6], 0) << "not a radstream recording";
  u[1] += add_hi;
  EXPECT_GE(H5Dwrite(d, outer, ms, fs, H5P_DEFAULT, u), 0);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Tclose(outer);
  H5Tclose(inner);
  H5Tclose(arr);
  H5Dclose(d);
  H5Fclose(f);
}
}  // namespace

// A recording whose timestamps jump by an hour used to make `replay --speed 1` wait that hour, deaf to Ctrl-C
// and SIGTERM. The wait is capped (--max-gap, default 2 s) and said; a long allowed wait still ends within
// 0.5 s of SIGTERM or SIGINT.
TEST(HostileFiles, AReplayWhoseTimestampsJumpIsCappedAndStopsOnSignals) {
  test::TempDir tmp;
  const std::string file = (fs::path(tmp.path()) / "jump.h5").string();
  ASSERT_EQ(radstream_cmd("simulate --spokes 40 --matrix 32 --coils 2 --rate 400 --out " + file).exit_code,
            0);
  forge_acquired_time(file, 20,
                      840);  // +840 x 2^32 ns: about an hour from spoke 20 on... for that spoke alone
  auto t0 = std::chrono::steady_clock::now();
  const auto r = radstream_cmd("replay " + file + " --socket pub --no-wait --endpoint tcp://127.0.0.1:26250");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("jump by 3607"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("go back by 3607"), std::string::npos) << r.output;  // and back at spoke 21
  EXPECT_NE(r.output.find("sent 40 spokes"), std::string::npos) << r.output;
  EXPECT_LT(s, 2.0 + 0.1 + 5.0) << "the capped gap (2 s), the spokes' own 0.1 s, and start-up";
  for (const char* sig : {"TERM", "INT"}) {
    const std::string pidfile = (fs::path(tmp.path()) / "pid").string();
    const std::string cmd =
        test::radstream_binary() + " replay " + file +
        " --socket pub --no-wait --max-gap 3600 --endpoint tcp://127.0.0.1:26251 & echo $! > " + pidfile +
        "; sleep 1; t0=$(date +%s%N); kill -" + sig + " $(cat " + pidfile + "); wait $(cat " + pidfile +
        "); rc=$?; t1=$(date +%s%N); echo "
        "rc=$rc ms=$(( (t1 - t0) / 1000000 ))";
    const auto k = test::run_command("bash -c '" + cmd + "'");
    const auto at = k.output.find("ms=");
    ASSERT_NE(at, std::string::npos) << k.output;
    const int ms = std::stoi(k.output.substr(at + 3));
    EXPECT_LE(ms, 500) << sig << ": " << k.output;
    EXPECT_NE(k.output.find("rc=130"), std::string::npos) << sig << ": " << k.output;
  }
}

// A sparse kx.dat of 6 GiB (it takes no disk) is refused by its size before a byte of it is read, at a small
// peak memory; it used to be read (3 GB).
TEST(HostileFiles, ASparseImpatientFileOfSixGibIsRefusedByItsSize) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "case";
  write_case(dir);
  fs::resize_file(dir / "kx.dat", std::uintmax_t(6) << 30);
  const std::string fhd = "recon --method fhd --backend cpu --impatient " + dir.string() + " --out " +
                          (fs::path(tmp.path()) / "x.cfl").string();
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(radstream_cmd(fhd), "kx.dat", "more than the 1024 MiB");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}
