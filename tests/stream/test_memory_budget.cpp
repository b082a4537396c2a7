// One memory budget for what a stream header implies (finding 3 of the second hostile-input round): a 1.3 KB
// header inside the per-field limits (matrix 4096, 64 coils) took the receiver past 8 GB; now everything it
// implies is summed and checked before anything is allocated.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "io/mrd_file.hpp"
#include "recon/memory_budget.hpp"
#include "recon/registry.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/sender.hpp"

using namespace radstream;
using namespace radstream::streamtest;
using namespace std::chrono_literals;

namespace {

// Peak resident memory (KiB) of `radstream run --method M` over one stream of matrix x coils, through
// /usr/bin/time.
long peak_kib(const std::string& method, int matrix, int coils, int port) {
  const std::string bin = test::radstream_binary();
  const test::TempDir dir;
  const auto r = test::run_command(
      "/usr/bin/time -o " + (dir / "peak") + " -f 'PEAK %M' " + bin +
      " run --headless --backend cpu --method " + method + " --endpoint " + tcp(port) +
      " --window 64 --stride 32 --no-skip --duration 3 > /dev/null 2>&1 & sleep 0.4; " + bin +
      " simulate --endpoint " + tcp(port) + " --matrix " + std::to_string(matrix) + " --coils " +
      std::to_string(coils) + " --rate 2000 --spokes 300 > /dev/null 2>&1; wait; cat " + (dir / "peak"));
  std::smatch m;
  if (!std::regex_search(r.output, m, std::regex("PEAK ([0-9]+)"))) return -1;
  return std::stol(m[1]);
}

}  // namespace

// The sums are upper bounds of what the reconstruction really takes: for each method, the measured peak of a
// 256^2 x 16-coil stream above that of a tiny one is at most the estimate (and not far below it).
TEST(MemoryBudget, TheEstimateBoundsWhatEachMethodReallyTakes) {
  if (test::run_command("test -x /usr/bin/time").exit_code != 0)
    GTEST_SKIP() << "/usr/bin/time is not installed";
  const long base = peak_kib("gridding", 16, 1, 26251);
  ASSERT_GT(base, 0);
  const Simulator sim([] {
    SimParams p;
    p.matrix = 256;
    p.coils = 16;
    return p;
  }());
  for (const char* method : {"gridding", "fbp", "cg-sense", "nlinv"}) {
    ReconParams r;
    r.method = kReconMethods.parse(method);
    const MemoryNeed need =
        memory_need(default_registry(), sim.header(), r, 1024, 1024, 1, false);  // the run's max_window
    const long peak = peak_kib(method, 256, 16, 26252);
    ASSERT_GT(peak, 0) << method;
    const double measured = double(peak - base) * 1024;
    std::printf(
        "%-9s measured %.0f MiB above the tiny stream, estimated %.0f MiB (reconstruction) + %.0f MiB "
        "(ring, zeroed when made)\n",
        method, measured / 1048576, need.recon_bytes / 1048576, need.ring_bytes / 1048576);
    EXPECT_GE(need.recon_bytes + need.ring_bytes, measured) << method;
    EXPECT_LE(need.recon_bytes, 6 * measured + (64 << 20)) << method << ": an estimate far above the truth";
  }
}

TEST(MemoryBudget, SizesAreReadWithTheirUnitsAndBadOnesAreNamed) {
  EXPECT_DOUBLE_EQ(parse_size("512M", "x"), 512.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(parse_size("1.5G", "x"), 1.5 * (1 << 30));
  EXPECT_DOUBLE_EQ(parse_size("8GiB", "x"), 8.0 * (1 << 30));
  for (const char* bad : {"", "8", "G", "-1G", "8X", "nanG"}) {
    try {
      parse_size(bad, "stream.memory_limit");
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("stream.memory_limit = '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  const auto r =
      test::run_command(test::radstream_binary() + " run --headless --memory-limit 8 --duration 0.1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("stream.memory_limit = '8' is not a size"), std::string::npos) << r.output;
}

// Through the real binary: a header of matrix 4096 x 64 coils (a 34 GB gridding grid, its ring within
// stream.max_ring_mib) is refused by the budget, named, counted, at a small peak; a stream within it then
// goes on; and --memory-limit bounds an ordinary stream too.
TEST(MemoryBudget, AHeaderBeyondTheBudgetIsRefusedBeforeAnythingIsAllocated) {
  if (test::run_command("test -x /usr/bin/time").exit_code != 0)
    GTEST_SKIP() << "/usr/bin/time is not installed";
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const int port = 26253;
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(
        "/usr/bin/time -f 'PEAK %M' " + bin + " run --headless --backend cpu --endpoint " + tcp(port) +
        " --window 32 --stride 16 --no-skip --duration 6 --metrics-json " + (dir / "m.json") + " 2>&1");
  });
  std::this_thread::sleep_for(400ms);
  SimParams small;
  small.matrix = 32;
  small.coils = 2;
  const Simulator sim(small);
  StreamHeader huge = sim.header();
  huge.matrix = 4096;
  huge.samples = 1024;
  huge.coils = 64;
  const std::string xml = stream_header_to_xml(huge);
  std::printf("the header: %zu bytes\n", xml.size());
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = tcp(port);
  {
    Sender s(ctx, sp, 21);
    ASSERT_TRUE(s.wait_for_peer(5000ms));
    s.send_header(xml);
    s.close();
  }
  std::this_thread::sleep_for(300ms);
  const auto sent = test::run_command(bin + " simulate --endpoint " + tcp(port) +
                                      " --matrix 32 --coils 2 --rate 2000 --spokes 200 2>&1");
  EXPECT_EQ(sent.exit_code, 0) << sent.output;
  const auto r = run.get();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("stream header of matrix 4096, 1024 samples x 64 coils needs"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the limit is"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("PEAK ([0-9]+)"))) << r.output;
  EXPECT_LT(std::stol(m[1]), 1 << 20) << "KiB: the refused header allocated nothing large";
  std::ifstream mf(dir / "m.json");
  const auto j = nlohmann::json::parse(mf);
  EXPECT_EQ(j.at("rejected").at("limits").get<int>(), 1);
  EXPECT_EQ(j.at("spokes").get<int>(), 200);
  EXPECT_GE(j.at("frames").get<int>(), 10);

  // An explicit limit below what a 256^2 x 16-coil stream needs refuses it too, and says so.
  const auto low =
      test::run_command(bin + " run --headless --backend cpu --memory-limit 64M --endpoint " + tcp(port + 1) +
                        " --duration 3 2>&1 & sleep 0.4; " + bin + " simulate --endpoint " + tcp(port + 1) +
                        " --matrix 256 --coils 16 --rate 2000 --spokes 50 > /dev/null 2>&1; wait");
  EXPECT_NE(low.output.find("the limit is 64 MiB (stream.memory_limit 64M)"), std::string::npos)
      << low.output;
}
