// Crafted MRD files. Acquisition headers that claim more (or fewer) samples, coils or
// trajectory dimensions than the file stores, and byte-level mutations of a whole recording, through the real
// program (`recon --input`, `replay`): exit 3 with a message naming the file, never a crash, a hang or a read
// past what is stored. And a file that another process holds open for writing can still be read.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <hdf5.h>
#include <ismrmrd/dataset.h>
#include <cstring>
#include <vector>

#include <filesystem>
#include <fstream>
#include <random>

#include "io/mrd_file.hpp"
#include "io/mrd_reader.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

test::CommandResult radstream_cmd(const std::string& args) {
  return test::run_command("timeout 60 " + test::radstream_binary() + " " + args);
}

// Overwrites one member of acquisition i's stored header in place (an HDF5 partial compound write): the
// trajectory and data arrays stay as stored, so the header now lies about them.
void forge_header_field(const std::string& path, std::size_t i, const char* field, std::uint16_t value) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, "/dataset/data", H5P_DEFAULT);
  const hid_t inner = H5Tcreate(H5T_COMPOUND, sizeof(std::uint16_t));
  H5Tinsert(inner, field, 0, H5T_NATIVE_UINT16);
  const hid_t outer = H5Tcreate(H5T_COMPOUND, sizeof(std::uint16_t));
  H5Tinsert(outer, "head", 0, inner);
  const hid_t fs = H5Dget_space(d), ms = H5Screate(H5S_SCALAR);
  const hsize_t start = i, one = 1;
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &one, nullptr);
  EXPECT_GE(H5Dwrite(d, outer, ms, fs, H5P_DEFAULT, &value), 0);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Tclose(outer);
  H5Tclose(inner);
  H5Dclose(d);
  H5Fclose(f);
}

std::string simulate(const test::TempDir& dir, const std::string& name, int spokes) {
  const std::string path = dir / name;
  const auto r =
      radstream_cmd("simulate --out " + path + " --matrix 32 --coils 2 --spokes " + std::to_string(spokes));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return path;
}

}  // namespace

TEST(MrdHostile, HeadersThatLieAboutTheStoredArraysAreRefusedWithExit3) {
  test::TempDir dir;
  struct Case {
    const char* field;
    std::uint16_t value;
  };
  // More samples or coils than stored (libismrmrd would copy past its buffers), fewer, and 3 trajectory
  // dimensions over a 2-D trajectory.
  const Case cases[] = {{"number_of_samples", 4096}, {"number_of_samples", 63},    {"active_channels", 64},
                        {"active_channels", 1},      {"trajectory_dimensions", 3}, {"number_of_samples", 0}};
  int k = 0;
  for (const auto& c : cases) {
    const std::string path = simulate(dir, "lie" + std::to_string(k++) + ".h5", 48);
    forge_header_field(path, 5, c.field, c.value);
    // radstream's reader names the acquisition and what is stored.
    try {
      MrdReader reader(path);
      (void)reader.read(4);  // the ones around it are fine
      (void)reader.read(6);
      (void)reader.read(5);
      ADD_FAILURE() << c.field << " = " << c.value << " was read";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("acquisition 5 stores"), std::string::npos) << e.what();
    }
    auto r = radstream_cmd("recon --backend cpu --input " + path + " --out " + (dir / "x.png"));
    EXPECT_EQ(r.exit_code, 3) << c.field << " = " << c.value << "\n" << r.output;
    EXPECT_NE(r.output.find("acquisition 5"), std::string::npos) << r.output;
    r = radstream_cmd("replay " + path + " --endpoint tcp://127.0.0.1:26171 --rate 100000");
    EXPECT_EQ(r.exit_code, 3) << c.field << " = " << c.value << "\n" << r.output;
  }
}

namespace {

// Rewrites acquisition 0's stored element (chunks of one element, as radstream writes them) so that its
// header and its two variable-length descriptors agree on samples x coils far beyond the file: the lengths
// HDF5 would allocate before any check.
void forge_declared_lengths(const std::string& path, std::uint16_t samples, std::uint16_t coils) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t d = H5Dopen2(f, "/dataset/data", H5P_DEFAULT);
  const hid_t t = H5Dget_type(d);
  const auto at = [](hid_t type, const char* name) {
    return H5Tget_member_offset(type, unsigned(H5Tget_member_index(type, name)));
  };
  const hid_t head = H5Tget_member_type(t, unsigned(H5Tget_member_index(t, "head")));
  const std::size_t h0 = at(t, "head");
  hsize_t first = 0, stored = 0;
  ASSERT_GE(H5Dget_chunk_storage_size(d, &first, &stored), 0);
  ASSERT_EQ(stored, H5Tget_size(t));
  std::vector<unsigned char> e(stored);
  std::uint32_t filters = 0;
  ASSERT_GE(H5Dread_chunk(d, H5P_DEFAULT, &first, &filters, e.data()), 0);
  const std::uint16_t dims = 2;
  const std::uint32_t traj = std::uint32_t(samples) * dims, data = 2u * samples * coils;
  std::memcpy(&e[h0 + at(head, "number_of_samples")], &samples, 2);
  std::memcpy(&e[h0 + at(head, "active_channels")], &coils, 2);
  std::memcpy(&e[h0 + at(head, "trajectory_dimensions")], &dims, 2);
  std::memcpy(&e[at(t, "traj")], &traj, 4);
  std::memcpy(&e[at(t, "data")], &data, 4);
  ASSERT_GE(H5Dwrite_chunk(d, H5P_DEFAULT, 0, &first, e.size(), e.data()), 0);
  H5Tclose(head);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
}

}  // namespace

// A file of about 100 KB whose first acquisition declares 65535 samples x 32767 coils (17 GB of data) with a
// header that agrees: refused by name before HDF5 allocates anything, in little memory (before, the reader
// allocated what the file declared, gigabytes for a small file).
TEST(MrdHostile, DeclaredLengthsBeyondTheFileAreRefusedBeforeAnyAllocation) {
  test::TempDir dir;
  const std::string path = simulate(dir, "big.h5", 48);
  forge_declared_lengths(path, 65535, 32767);
  try {
    MrdReader reader(path);
    (void)reader.read(0);
    ADD_FAILURE() << "the forged acquisition was read";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("acquisition 0 declares"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("more than the whole file holds"), std::string::npos) << e.what();
  }
  const auto r =
      test::run_command("/usr/bin/time -f 'PEAK_KB=%M' " + test::radstream_binary() +
                        " recon --backend cpu --input " + path + " --out " + (dir / "x.png") + " 2>&1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("acquisition 0 declares"), std::string::npos) << r.output;
  const auto peak = r.output.find("PEAK_KB=");
  ASSERT_NE(peak, std::string::npos) << r.output;
  const long kb = std::stol(r.output.substr(peak + 8));
  std::printf("recon --input of the forged file: peak %ld KB\n", kb);
  EXPECT_LT(kb, 300L * 1024) << r.output;
}

// A recording still open for writing (libismrmrd holds it read-write, with HDF5's lock) can be read by
// another process: radstream's reader takes no lock.
TEST(MrdHostile, AFileHeldOpenForWritingCanBeReadByAnotherProcess) {
  test::TempDir dir;
  const std::string path = simulate(dir, "held.h5", 64);
  ISMRMRD::Dataset held(path.c_str(), "dataset", false);  // opened read-write, locked, by this process
  const auto r = radstream_cmd("recon --backend cpu --input " + path + " --out " + (dir / "x.png"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "x.png"));
}

// Random byte mutations of a recording (its metadata and its arrays): every run ends with exit 0 (the bytes
// hit data only), 3 (refused with a reason) or 4 (the image would not be finite), never a signal. The
// 1,000-file version: scripts/fuzz_mrd_files.sh.
TEST(MrdHostile, MutatedRecordingsNeverCrashTheReaders) {
  test::TempDir dir;
  const std::string clean = simulate(dir, "clean.h5", 32);
  std::ifstream in(clean, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 4096u);
  std::mt19937_64 rng(15);
  int refused = 0, read_fine = 0;
  for (int k = 0; k < 40; ++k) {
    std::vector<char> m = bytes;
    const int edits = 1 + int(rng() % 16);
    // Half the runs aim at the first 4 KiB (superblock, object headers, the XML): HDF5's own metadata.
    const std::size_t span = k % 2 ? m.size() : std::size_t(4096);
    for (int e = 0; e < edits; ++e) m[rng() % span] = char(rng() & 0xff);
    const std::string path = dir / fmt::format("m{}.h5", k);
    std::ofstream(path, std::ios::binary).write(m.data(), std::streamsize(m.size()));
    const auto r = radstream_cmd("recon --backend cpu --input " + path + " --out " + (dir / "m.png"));
    // Exit 4 only for data whose image came out non-finite (a mutated sample near 1e38): refused by name,
    // where it used to be written with NaN pixels.
    const bool non_finite = r.exit_code == 4 && r.output.find("non-finite") != std::string::npos;
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3 || non_finite)
        << "mutation " << k << ": exit " << r.exit_code << "\n"
        << r.output;
    (r.exit_code == 0 ? read_fine : refused)++;
  }
  std::printf("mutated recordings: %d read, %d refused with exit 3, 0 crashes\n", read_fine, refused);
  EXPECT_GT(refused, 0);
}

// An MRD file whose XML header is stored as a UTF-8 string (h5py and other writers do that; ISMRMRD writes
// ASCII) is read like any other: HDF5 converts between no character sets, and such a file used to be refused.
TEST(MrdHostile, AnXmlHeaderStoredAsUtf8IsRead) {
  test::TempDir dir;
  const std::string path = simulate(dir, "utf8.h5", 48);
  std::string xml;
  {
    MrdReader r(path);
    xml = r.xml();
  }
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  ASSERT_GE(H5Ldelete(f, "/dataset/xml", H5P_DEFAULT), 0);
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  const hid_t s = H5Screate(H5S_SCALAR);
  const hid_t d = H5Dcreate2(f, "/dataset/xml", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  const char* text = xml.c_str();
  ASSERT_GE(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text), 0);
  H5Dclose(d);
  H5Sclose(s);
  H5Tclose(t);
  H5Fclose(f);
  const auto r = radstream_cmd("recon --backend cpu --input " + path + " --out " + (dir / "x.png"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  MrdReader back(path);
  EXPECT_EQ(back.xml(), xml);
}

// A recording cut off while a flush was being written (a SIGKILL mid-flush) has a torn tail: acquisitions
// whose extent was written before their data (read back as HDF5's zero fill), or whose stored bytes are
// garbage. Readers keep every acquisition before the tail and say how many they kept, instead of refusing
// the whole file. Both kinds are made here from a whole recording, as such a kill leaves them.
TEST(MrdHostile, ATornTailIsLeftOutAndEverythingBeforeItIsKept) {
  test::TempDir dir;
  const std::string whole = simulate(dir, "whole.h5", 200);
  // 1. The extent ahead of the data: 40 acquisitions that were never written.
  const std::string ahead = dir / "ahead.h5";
  std::filesystem::copy_file(whole, ahead);
  {
    const hid_t f = H5Fopen(ahead.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t d = H5Dopen2(f, "/dataset/data", H5P_DEFAULT);
    const hsize_t n = 240;
    EXPECT_GE(H5Dset_extent(d, &n), 0);
    H5Dclose(d);
    H5Fclose(f);
  }
  {
    MrdReader r(ahead);
    EXPECT_EQ(r.count(), 200u);
    EXPECT_EQ(r.torn_tail(), 40u);
  }
  // 2. The last chunk's stored bytes are garbage (its index written, its contents not).
  const std::string garbage = dir / "garbage.h5";
  std::filesystem::copy_file(whole, garbage);
  hsize_t chunks = 0, addr = 0, size = 0;
  {
    const hid_t f = H5Fopen(garbage.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, "/dataset/data", H5P_DEFAULT);
    const hid_t s = H5Dget_space(d);
    ASSERT_GE(H5Dget_num_chunks(d, s, &chunks), 0);
    ASSERT_GT(chunks, 1u);
    hsize_t offset = 0;
    unsigned mask = 0;
    haddr_t a = 0;
    ASSERT_GE(H5Dget_chunk_info(d, s, chunks - 1, &offset, &mask, &a, &size), 0);
    addr = a;
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
  }
  {
    std::fstream io(garbage, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(std::streamoff(addr));
    const std::vector<char> junk(size, char(0xA5));
    io.write(junk.data(), std::streamsize(junk.size()));
  }
  std::size_t kept = 0;
  {
    MrdReader r(garbage);
    kept = r.count();
    EXPECT_LT(kept, 200u);
    EXPECT_GE(kept, 100u) << "only the last chunk is torn";
    EXPECT_EQ(kept + r.torn_tail(), 200u);
  }
  // Through the program: convert, recon and replay read what precedes the tail and say so.
  for (const auto& [path, n] : {std::pair{ahead, std::size_t(200)}, std::pair{garbage, kept}}) {
    const auto c = radstream_cmd("convert --input " + path + " --out " + path + ".mrd");
    EXPECT_EQ(c.exit_code, 0) << c.output;
    EXPECT_NE(c.output.find("(a torn tail"), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("keeping the first " + std::to_string(n)), std::string::npos) << c.output;
    EXPECT_EQ(read_mrd(path + ".mrd").spokes.size(), n);
    const auto r = radstream_cmd("recon --backend cpu --input " + path + " --out " + path + ".png");
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

// recon --input reads its spokes straight into the frame (not held twice: a 200,000-spoke file took 4.5 GB)
// and only after the frame and the reconstruction are known to fit the memory budget; a range over it is
// refused before reading, naming the way out (a window).
TEST(MrdHostile, ReconOfAFileChecksTheMemoryBudgetBeforeReading) {
  test::TempDir dir;
  const std::string path = dir / "long.h5";
  ASSERT_EQ(radstream_cmd("simulate --out " + path + " --matrix 64 --coils 8 --spokes 4000").exit_code, 0);
  auto r =
      radstream_cmd("recon --backend cpu --input " + path + " --memory-limit 64M --out " + (dir / "a.png"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("4000 spokes from spoke 0: the reconstruction needs"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("read a window with --start/--count"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "a.png"));
  r = radstream_cmd("recon --backend cpu --input " + path +
                    " --memory-limit 64M --start 1000 --count 400 --out " + (dir / "b.png"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("400 spokes from spoke 1000"), std::string::npos) << r.output;
  r = radstream_cmd("recon --backend cpu --input " + path + " --memory-limit lots --out " + (dir / "c.png"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--memory-limit = 'lots' is not a size"), std::string::npos) << r.output;
}
