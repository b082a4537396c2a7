// radstream batch under MPI: 8 simulated recordings x 2 parameter sets through
// `mpirun --oversubscribe -np 4`: every item done exactly once, outputs byte-identical to a one-rank run; a
// rank killed mid-item (RADSTREAM_BATCH_DIE) fails the job, and the rerun makes only the missing items. Needs
// mpirun (Open MPI): skipped with the reason without it, failed instead with RADSTREAM_REQUIRE_MPI=1 (CI).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "io/cfl.hpp"
#include "test_util.hpp"

using namespace radstream;
namespace fs = std::filesystem;

namespace {

const char* kMpiEnv =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 ";

bool have_mpirun(std::string& why) {
  if (test::run_command("command -v mpirun").exit_code == 0) return true;
  why = "mpirun not found (apt-get install openmpi-bin)";
  return false;
}

#define REQUIRE_MPI()                                                         \
  do {                                                                        \
    std::string why;                                                          \
    if (!have_mpirun(why)) {                                                  \
      if (test::env_flag("RADSTREAM_REQUIRE_MPI")) FAIL() << why;             \
      GTEST_SKIP() << why << "; set RADSTREAM_REQUIRE_MPI=1 to fail instead"; \
    }                                                                         \
  } while (0)

// 8 recordings (64 spokes, 32^2, 2 coils, each its own stream id and noise) and a sweep of 2 sets.
void make_inputs(const test::TempDir& dir) {
  std::ofstream list(dir / "list.txt");
  for (int i = 1; i <= 8; ++i) {
    const std::string f = "rec" + std::to_string(i) + ".h5";
    const auto r =
        test::run_command(test::radstream_binary() + " simulate --out " + (dir / f) +
                          " --spokes 64 --matrix 32 --coils 2 --snr 20 --stream-id " + std::to_string(i));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    list << f << "\n";
  }
  std::ofstream(dir / "sweep.yaml") << "sets:\n"
                                       "  - name: grid-32\n    frames: {window: 32, stride: 16}\n"
                                       "    recon: {method: gridding, backend: cpu}\n"
                                       "  - name: fbp-48\n    frames: {window: 48, stride: 16}\n"
                                       "    recon: {method: fbp, backend: cpu}\n";
}

std::string batch_args(const test::TempDir& dir, const std::string& out) {
  return " batch --files " + (dir / "list.txt") + " --param-sweep " + (dir / "sweep.yaml") + " --out " +
         (dir / out);
}

nlohmann::json metrics(const test::TempDir& dir, const std::string& out) {
  std::ifstream f(dir / (out + "/batch-metrics.json"));
  return nlohmann::json::parse(f);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Every image file of `a` has a byte-identical twin in `b`; returns how many.
int expect_same_images(const test::TempDir& dir, const std::string& a, const std::string& b) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / a)) {
    const auto ext = e.path().extension();
    if (ext != ".cfl" && ext != ".hdr") continue;
    const std::string twin = dir / (b + "/" + e.path().filename().string());
    EXPECT_TRUE(fs::exists(twin)) << twin;
    EXPECT_TRUE(slurp(e.path().string()) == slurp(twin)) << e.path() << " differs from " << twin;
    ++n;
  }
  return n;
}

}  // namespace

TEST(Batch, FourRanksDoEveryItemOnceByteIdenticalToOneRankAndARerunFinishesAKilledRun) {
  REQUIRE_MPI();
  test::TempDir dir;
  make_inputs(dir);
  const std::string bin = test::radstream_binary();

  auto one = test::run_command(bin + batch_args(dir, "one"));  // one process (an MPI singleton)
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(metrics(dir, "one")["done"], 16);
  // A rerun that finds everything done adds its report; the first run's figures are kept, not replaced.
  auto again = test::run_command(bin + batch_args(dir, "one"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(metrics(dir, "one")["done"], 0);
  EXPECT_EQ(metrics(dir, "one")["already_done"], 16);
  ASSERT_EQ(metrics(dir, "one")["previous_runs"].size(), 1u);
  EXPECT_EQ(metrics(dir, "one")["previous_runs"][0]["done"], 16);
  EXPECT_GT(metrics(dir, "one")["previous_runs"][0]["frames"].get<int>(), 0);

  auto four = test::run_command(kMpiEnv + std::string("mpirun -np 4 ") + bin + batch_args(dir, "four"));
  ASSERT_EQ(four.exit_code, 0) << four.output;
  const auto m = metrics(dir, "four");
  EXPECT_EQ(m["items"], 16);
  EXPECT_EQ(m["done"], 16);
  EXPECT_EQ(m["failed"], 0);
  EXPECT_EQ(m["workers"], 3);
  std::multiset<std::string> ids;
  int working_ranks = 0;
  for (const auto& r : m["ranks"]) {
    working_ranks += r["items_done"].get<int>() > 0;
    for (const auto& d : r["done"]) ids.insert(d["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 16u);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 16u) << "an item was done twice";
  EXPECT_GE(working_ranks, 2) << "rank 0 handed out every item to one worker";
  EXPECT_EQ(expect_same_images(dir, "one", "four"), 32);

  // Rank 2 dies in the middle of its second item: the job fails, some items are missing.
  auto killed = test::run_command(std::string(kMpiEnv) +
                                  "RADSTREAM_BATCH_DIE=2:1 mpirun -x RADSTREAM_BATCH_DIE -np 4 " + bin +
                                  batch_args(dir, "killed"));
  EXPECT_NE(killed.exit_code, 0) << killed.output;
  int done_before = 0;
  for (const auto& e : fs::directory_iterator(dir / "killed")) done_before += e.path().extension() == ".json";
  done_before -= fs::exists(dir / "killed/batch-metrics.json");
  EXPECT_LT(done_before, 16);
  auto rerun = test::run_command(kMpiEnv + std::string("mpirun -np 4 ") + bin + batch_args(dir, "killed"));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.output;
  const auto mr = metrics(dir, "killed");
  EXPECT_EQ(mr["already_done"], done_before);
  EXPECT_EQ(mr["done"], 16 - done_before) << "the rerun made more than the missing items";
  EXPECT_EQ(mr["missing_after"], 0);
  EXPECT_EQ(expect_same_images(dir, "one", "killed"), 32);
  for (const auto& e : fs::directory_iterator(dir / "killed"))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "leftover " << e.path();
}

TEST(Batch, BadSweepsAndFilesAreNamed) {
  test::TempDir dir;
  std::ofstream(dir / "bad.yaml") << "sets:\n  - name: a\n    recon: {methd: gridding}\n";
  std::ofstream(dir / "list.txt") << "missing.h5\n";
  const std::string bin = test::radstream_binary();
  auto r = test::run_command(bin + " batch --files " + (dir / "list.txt") + " --param-sweep " +
                             (dir / "bad.yaml") + " --out " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("set 'a'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("methd"), std::string::npos) << r.output;
  std::ofstream(dir / "good.yaml") << "sets:\n  - name: a\n    recon: {method: gridding}\n";
  r = test::run_command(bin + " batch --files " + (dir / "list.txt") + " --param-sweep " +
                        (dir / "good.yaml") + " --out " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 3) << r.output;  // a file that cannot be read: exit 3 (issue 30; it was 2)
  EXPECT_NE(r.output.find("missing.h5"), std::string::npos) << r.output;
  r = test::run_command(bin + " batch --files " + (dir / "missing.h5") + " --param-sweep " +
                        (dir / "good.yaml") + " --out " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("missing.h5"), std::string::npos) << r.output;
  // A recording that is not one: its item fails, named, the run goes on and exits 1; nothing is marked done.
  std::ofstream(dir / "garbage.h5") << "this is not an HDF5 file\n";
  std::ofstream(dir / "list2.txt") << "garbage.h5\n";
  r = test::run_command(bin + " batch --files " + (dir / "list2.txt") + " --param-sweep " +
                        (dir / "good.yaml") + " --out " + (dir / "out2"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("garbage.h5 x a failed"), std::string::npos) << r.output;
  const auto m = metrics(dir, "out2");
  EXPECT_EQ(m["failed"], 1);
  EXPECT_EQ(m["missing_after"], 1);
  EXPECT_NE(m["failures"][0]["file"].get<std::string>().find("garbage.h5"), std::string::npos);
}

// A device or a FIFO given as a recording or as a file list is refused at once, named (it used to be read
// without end: hashing a recording reads it whole).
TEST(Batch, DevicesAndFifosAreRefusedAtOnce) {
  test::TempDir dir;
  std::ofstream(dir / "good.yaml") << "sets:\n  - name: a\n    recon: {method: gridding}\n";
  std::filesystem::create_symlink("/dev/zero", dir / "zero.txt");
  ASSERT_EQ(mkfifo((dir / "fifo.h5").c_str(), 0600), 0);
  const std::string bin = test::radstream_binary();
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& f : {std::string("/dev/zero"), dir / "zero.txt", dir / "fifo.h5"}) {
    const auto r = test::run_command("timeout 20 " + bin + " batch --files " + f + " --param-sweep " +
                                     (dir / "good.yaml") + " --out " + (dir / "out"));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.exit_code, 124) << "hung on " << f << ": " << r.output;
    EXPECT_NE(r.output.find("is not a regular file"), std::string::npos) << r.output;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
}

// CG-SENSE with no --sens in a batch: every item estimates its maps from its own data, on whichever backend
// the machine has (the CUDA chain used to skip the estimate and fail every item with "no coil maps for this
// frame"); each item's first frame equals `recon --input` of the same window (same backend, cold start, maps
// from that window).
TEST(Batch, CgSenseWithoutAMapsFileEstimatesThemInEveryItem) {
  REQUIRE_MPI();
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  std::ofstream list(dir / "list.txt");
  for (int i = 1; i <= 2; ++i) {
    const std::string f = "rec" + std::to_string(i) + ".h5";
    const auto r =
        test::run_command(bin + " simulate --out " + (dir / f) +
                          " --spokes 64 --matrix 32 --coils 4 --snr 20 --stream-id " + std::to_string(i));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    list << f << "\n";
  }
  list.close();
  std::ofstream(dir / "sweep.yaml") << "sets:\n  - name: cg\n    frames: {window: 32, stride: 16}\n"
                                       "    recon: {method: cg-sense, iterations: 5}\n";
  const auto r = test::run_command(bin + batch_args(dir, "out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto m = metrics(dir, "out");
  EXPECT_EQ(m["done"], 2);
  EXPECT_EQ(m["failed"], 0) << r.output;
  for (const auto& e : fs::directory_iterator(dir / "out")) {
    if (e.path().extension() != ".cfl") continue;
    const std::string id = e.path().stem().string();
    std::ifstream side(dir / ("out/" + id + ".json"));
    fs::path rec = nlohmann::json::parse(side)["file"].get<std::string>();
    if (rec.is_relative()) rec = dir.path() / rec;
    SCOPED_TRACE(id + " " + rec.string());
    const auto one = test::run_command(bin + " recon --input " + rec.string() +
                                       " --start 0 --count 32 --method cg-sense --iterations 5 --out " +
                                       (dir / (id + "-first.cfl")));
    ASSERT_EQ(one.exit_code, 0) << one.output;
    const CflArray stack = read_cfl(e.path().string()), first = read_cfl(dir / (id + "-first"));
    ASSERT_GE(stack.data.size(), first.data.size());
    const std::vector<cfloat> head(stack.data.begin(), stack.data.begin() + long(first.data.size()));
    EXPECT_LE(test::rel_error(head, first.data), 1e-5);
  }
}
