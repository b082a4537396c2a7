// The radstream program as a user runs it: bad input gives a clear error and a non-zero exit, never a crash.
#include <gtest/gtest.h>

#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <cstdio>
#include <sstream>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include <stb_image.h>

#include "io/cfl.hpp"
#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {
test::CommandResult radstream_cmd(const std::string& args) {
  return test::run_command(test::radstream_binary() + " " + args);
}
void expect_failure(const test::CommandResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << r.output;
}
void write_small_bart_pair(const test::TempDir& dir) {
  std::vector<cfloat> traj(3 * 16 * 4), ksp(16 * 4 * 2, cfloat(1, 0));
  for (int p = 0; p < 4; ++p)
    for (int n = 0; n < 16; ++n) traj[3 * (p * 16 + n)] = cfloat(float(n - 8) * 0.5f, 0);
  write_cfl(dir / "t", {3, 16, 4}, traj);
  write_cfl(dir / "k", {1, 16, 4, 2}, ksp);
}
}  // namespace

TEST(Cli, SimulateThenReconstructMrdToPngAndCfl) {
  test::TempDir dir;
  auto r = radstream_cmd("simulate --out " + dir / "s.h5" + " --spokes 64 --matrix 64 --coils 3 --snr 30");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = radstream_cmd("recon --backend cpu --input " + dir / "s.h5" + " --out " + dir / "s.png");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("backend: cpu"), std::string::npos) << r.output;
  EXPECT_GT(std::filesystem::file_size(dir / "s.png"), 100u);
  r = radstream_cmd("recon --input " + dir / "s.h5" + " --start 10 --count 40 --dcf voronoi --out " +
                    dir / "s.cfl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto img = read_cfl(dir / "s.cfl");
  EXPECT_EQ(img.dims[0], 64);
  EXPECT_EQ(img.dims[1], 64);
}

TEST(Cli, TruncatedCflIsAClearError) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  std::filesystem::resize_file(dir / "k.cfl", 100);
  expect_failure(radstream_cmd("recon --traj " + dir / "t" + " --kspace " + dir / "k" +
                               " --matrix 16 --out " + dir / "o.cfl"),
                 3, "truncated");
}

TEST(Cli, AbsurdHeaderDimensionsAreAClearError) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  std::ofstream(dir / "k.hdr") << "# Dimensions\n1 16 4 99999999999 1 1\n";
  expect_failure(radstream_cmd("recon --traj " + dir / "t" + " --kspace " + dir / "k" +
                               " --matrix 16 --out " + dir / "o.cfl"),
                 3, "k.hdr");
}

TEST(Cli, KspaceThatDisagreesWithTrajectoryIsAClearError) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  std::vector<cfloat> k(15 * 4);
  write_cfl(dir / "k", {1, 15, 4}, k);
  expect_failure(radstream_cmd("recon --traj " + dir / "t" + " --kspace " + dir / "k" +
                               " --matrix 16 --out " + dir / "o.cfl"),
                 3, "do not match");
}

TEST(Cli, MrdWithoutXmlHeaderIsAClearError) {
  test::TempDir dir;
  {
    ISMRMRD::Dataset d((dir / "noxml.h5").c_str(), "dataset", true);
    ISMRMRD::Acquisition acq(64, 2, 2);
    d.appendAcquisition(acq);
  }
  expect_failure(radstream_cmd("recon --input " + dir / "noxml.h5" + " --out " + dir / "o.png"), 3,
                 "no XML header");
}

TEST(Cli, MrdWhoseSampleCountsDisagreeIsAClearError) {
  test::TempDir dir;
  SimParams p;
  p.matrix = 32;
  p.coils = 2;
  const Simulator sim(p);
  {
    ISMRMRD::Dataset d((dir / "bad.h5").c_str(), "dataset", true);
    d.writeHeader(stream_header_to_xml(sim.header()));  // declares 64 samples
    ISMRMRD::Acquisition acq(50, 2, 2);
    d.appendAcquisition(acq);
  }
  expect_failure(radstream_cmd("recon --input " + dir / "bad.h5" + " --out " + dir / "o.png"), 3,
                 "acquisition 0 has 50 samples");
}

TEST(Cli, BadOptionValuesNameTheOption) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  const std::string io =
      " --traj " + dir / "t" + " --kspace " + dir / "k" + " --matrix 16 --out " + dir / "o.cfl";
  expect_failure(radstream_cmd("recon --dcf magic" + io), 2, "--dcf magic");
  expect_failure(radstream_cmd("recon --width 5" + io), 2, "kernel_width = 5");
  expect_failure(radstream_cmd("recon --oversampling 9" + io), 2, "oversampling");
  expect_failure(radstream_cmd("recon --backend gpu" + io), 2, "gpu");
  expect_failure(radstream_cmd("recon --traj " + dir / "t" + " --kspace " + dir / "k" +
                               " --matrix 16 --out " + dir / "o.jpg"),
                 2, "o.jpg");
  expect_failure(radstream_cmd("simulate --out " + dir / "x.h5" + " --coils 99"), 2, "coils = 99");
}

// A --matrix that does not fit the trajectory (BART units reach +-N/2) is a wrong option: exit 2 (issue 30;
// it was 3, as for a file that cannot be read), for recon and convert alike.
TEST(Cli, TrajectoryInWrongUnitsIsCaught) {
  test::TempDir dir;
  write_small_bart_pair(dir);  // reaches +-4 in BART units: fine for matrix 16, not for matrix 8 -> |k| = 0.5
  std::vector<cfloat> traj(3 * 16 * 4);
  for (int p = 0; p < 4; ++p)
    for (int n = 0; n < 16; ++n) traj[3 * (p * 16 + n)] = cfloat(float(n - 8), 0);  // +-8: cycles/pixel x 16
  write_cfl(dir / "t", {3, 16, 4}, traj);
  expect_failure(radstream_cmd("recon --traj " + dir / "t" + " --kspace " + dir / "k" + " --matrix 8 --out " +
                               dir / "o.cfl"),
                 2, "--matrix");
  expect_failure(radstream_cmd("convert --traj " + dir / "t" + " --kspace " + dir / "k" +
                               " --matrix 8 --out " + dir / "o.h5"),
                 2, "--matrix");
}

TEST(Cli, DemoWritesFramesAndMetrics) {
  test::TempDir dir;
  const auto r = radstream_cmd("demo --headless --out-dir " + dir / "demo" +
                               " --frames 3 --snapshot-every 1 --matrix 64 --coils 2 --window 34 "
                               "--stride 8 --backend cpu --rate 400 --pool 128");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("headless"), std::string::npos) << r.output;  // it says so
  EXPECT_TRUE(std::filesystem::exists(dir / "demo/frame_000002.png"));
  // Started once: the simulator's pool is made before the pipeline starts, so the pipeline does not wait (and
  // say so) on the demo's own simulator, and nothing starts twice.
  const auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto at = r.output.find(what); at != std::string::npos; at = r.output.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_LE(count("waiting for a sender"), 1u) << r.output;
  EXPECT_EQ(count("spokes precomputed"), 1u) << r.output;
  EXPECT_EQ(count("stream header"), 1u) << r.output;
  std::ifstream m(dir / "demo/metrics.json");
  std::string s((std::istreambuf_iterator<char>(m)), {});
  EXPECT_NE(s.find("\"frames\": "), std::string::npos) << s;
  EXPECT_NE(s.find("\"missing\": 0"), std::string::npos) << s;
}

// A multi-slice stream headless: each slice's frames under its own names, per-slice metrics; GPUs named for
// the slices without the cuda backend are refused with the reason.
TEST(Cli, DemoWithThreeSlicesWritesEachSlicesFrames) {
  test::TempDir dir;
  const auto r = radstream_cmd("demo --headless --out-dir " + dir / "demo" +
                               " --frames 12 --snapshot-every 1 --matrix 64 --coils 2 --window 34 "
                               "--stride 8 --backend cpu --rate 600 --pool 128 --slices 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int k = 0; k < 3; ++k)
    EXPECT_TRUE(std::filesystem::exists(dir / ("demo/slice" + std::to_string(k) + "_frame_000002.png"))) << k;
  std::ifstream m(dir / "demo/metrics.json");
  const auto j = nlohmann::json::parse(m);
  ASSERT_EQ(j["slices"].size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_GE(j["slices"][k]["frames"].get<int>(), 2) << k;
  EXPECT_EQ(j["missing"], 0);
  const auto bad = radstream_cmd("demo --headless --out-dir " + dir / "demo2" +
                                 " --frames 3 --matrix 64 --coils 2 --backend cpu --slices 2 --gpus 0");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("placement.gpus"), std::string::npos) << bad.output;
}

// The benchmark reports itself: version and commit, every case run or skipped with its reason (never an empty
// list without a word), an unknown case is an error, and --backend cpu runs a GPU chain case on the CPU.
TEST(Cli, BenchJsonNamesVersionSkippedCasesAndRefusesUnknownCases) {
  test::TempDir dir;
  const std::string cases = std::string(" --cases-dir ") + RADSTREAM_CONFIG_DIR + "/bench";
  expect_failure(radstream_cmd("bench --case R99" + cases), 2, "R99");
  auto r = radstream_cmd("bench --case R2 R2-fbp --frames 2 --warmup 0 --backend cpu --out " +
                         dir / "b.json" + cases);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(dir / "b.json");
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("radstream_version").get<std::string>(), "0.1.0");
  EXPECT_FALSE(j.at("commit").get<std::string>().empty());
  std::vector<std::string> ran, skipped;
  for (const auto& c : j.at("cases")) ran.push_back(c.at("case"));
  for (const auto& c : j.at("skipped")) skipped.push_back(c.at("case"));
  EXPECT_EQ(ran.size() + skipped.size(), 2u) << j.dump(1);
  ASSERT_FALSE(ran.empty());
  EXPECT_NE(std::find(ran.begin(), ran.end(), "R2"), ran.end());  // the GPU chain case, run on the CPU
  for (const auto& c : j.at("cases"))
    if (c.at("case") == "R2") {
      EXPECT_EQ(c.at("backend"), "cpu");
      EXPECT_GT(c.at("frame_ms").at("median").get<double>(), 0.0);
    }
  for (const auto& c : j.at("skipped")) EXPECT_FALSE(c.at("reason").get<std::string>().empty());
  EXPECT_NE(r.output.find("R2 "), std::string::npos) << r.output;  // the summary table
  r = radstream_cmd("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("radstream 0.1.0 (commit "), std::string::npos) << r.output;
}

// Run from another folder, bench finds config/bench beside the program; a GPU case skipped on a machine
// without a GPU is said once, with what would run it (--backend cpu); R7-coils-1 has no target, so the run
// passes either way.
TEST(Cli, BenchRunsOutsideTheRepositoryAndSaysOnceWhatRunsASkippedCase) {
  test::TempDir dir;
  const auto r = test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() +
                                   " bench --case R7-coils-1 --frames 1 --warmup 0 --out " + dir / "b.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(dir / "b.json");
  const auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j.at("cases").size() + j.at("skipped").size(), 1u) << j.dump(1);
  if (!j.at("skipped").empty()) {
    const std::string why = j.at("skipped")[0].at("reason");
    EXPECT_NE(why.find("--backend cpu runs it on the CPU"), std::string::npos) << why;
    std::size_t lines = 0;
    for (std::size_t at = r.output.find("needs a GPU"); at != std::string::npos;
         at = r.output.find("needs a GPU", at + 1))
      ++lines;
    EXPECT_EQ(lines, 1u) << r.output;
  }
}

// The benchmark judges each case against its target (clauses on the case's own result), says the
// build type and the machine's load, prints the verdicts in its summary, refuses a target it cannot parse,
// and draws the scaling cases as plots.
TEST(Cli, BenchJudgesTargetsSaysBuildTypeAndLoadAndPlotsScaling) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "cases");
  const auto write_case = [&](const std::string& name, const std::string& target) {
    std::ofstream(dir / ("cases/" + name + ".yaml"))
        << "bench:\n  name: " << name << "\n  spokes: 32\n  samples: 64\n  coils: 2\n  matrix: 32\n"
        << "  backend: cpu\n  target: \"" << target
        << "\"\nrecon:\n  backend: cpu\n  fftw_planner: estimate\n";
  };
  write_case("T-pass", "/frame_ms/median <= 100000; /frames_per_s >= 0.001");
  write_case("T-fail", "/frame_ms/median <= 0");
  write_case("T-missing", "/no/such/metric >= 1");
  auto r =
      radstream_cmd("bench --frames 2 --warmup 0 --cases-dir " + dir / "cases" + " --out " + dir / "b.json");
  // A failed target is a failed benchmark (exit 1, said last), the JSON written all the same.
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bench: 2 target(s) failed"), std::string::npos) << r.output;
  std::ifstream f(dir / "b.json");
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("build_type"), "Release");
  EXPECT_GE(j.at("load_average_1min_before").get<double>(), 0.0);
  EXPECT_GE(j.at("load_average_1min_after").get<double>(), 0.0);
  std::map<std::string, nlohmann::json> by;
  for (const auto& c : j.at("cases")) by[c.at("case")] = c;
  ASSERT_EQ(by.size(), 3u);
  EXPECT_TRUE(by["T-pass"].at("target").at("pass").get<bool>());
  EXPECT_EQ(by["T-pass"].at("target").at("checks").size(), 2u);
  EXPECT_FALSE(by["T-fail"].at("target").at("pass").get<bool>());
  EXPECT_GT(by["T-fail"].at("target").at("checks")[0].at("value").get<double>(), 0.0);
  EXPECT_FALSE(by["T-missing"].at("target").at("pass").get<bool>());
  EXPECT_TRUE(by["T-missing"].at("target").at("checks")[0].at("value").is_null());
  EXPECT_NE(r.output.find("targets: 1 pass, 2 fail"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAIL"), std::string::npos) << r.output;
  // A target that does not parse stops the benchmark before any case, naming the clause.
  write_case("T-bad", "/frame_ms/median < 3");
  expect_failure(radstream_cmd("bench --cases-dir " + dir / "cases"), 2, "'/frame_ms/median < 3'");
  // Plots of the scaling cases: one PNG per parameter, beside the JSON.
  nlohmann::json res = {{"gpu", "test"}, {"cases", nlohmann::json::array()}};
  const auto add = [&](const std::string& name, double ms) {
    res["cases"].push_back({{"case", name}, {"backend", "cuda"}, {"frame_ms", {{"median", ms}}}});
  };
  add("R1", 0.28);
  for (const auto& [c, ms] :
       std::vector<std::pair<int, double>>{{1, 0.02}, {4, 0.05}, {8, 0.08}, {16, 0.15}, {64, 0.6}})
    add("R7-coils-" + std::to_string(c), ms);
  add("R7-matrix-512", 0.7);
  std::ofstream(dir / "res.json") << res.dump();
  r = radstream_cmd("bench --plot " + dir / "res.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* p : {"res-scaling-coils.png", "res-scaling-matrix.png"}) {
    int w = 0, h = 0, ch = 0;
    unsigned char* px = stbi_load((dir / p).c_str(), &w, &h, &ch, 3);
    ASSERT_NE(px, nullptr) << p;
    EXPECT_EQ(w, 760);
    EXPECT_EQ(h, 480);
    long blue = 0;  // the gridding series' colour
    for (int i = 0; i < w * h; ++i) blue += px[3 * i] == 20 && px[3 * i + 1] == 90 && px[3 * i + 2] == 200;
    stbi_image_free(px);
    EXPECT_GT(blue, 500) << p;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "res-scaling-spokes.png"));  // one point (R1) is not a series
  std::ofstream(dir / "none.json") << nlohmann::json({{"cases", nlohmann::json::array()}}).dump();
  expect_failure(radstream_cmd("bench --plot " + dir / "none.json"), 2, "no scaling case");
}

// The README's key table is `radstream config-keys --markdown`: names, defaults and ranges cannot drift.
TEST(Cli, ReadmeKeyTableIsTheGeneratedOne) {
  const auto r = radstream_cmd("config-keys --markdown");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(std::string(RADSTREAM_CONFIG_DIR) + "/../README.md");
  const std::string readme((std::istreambuf_iterator<char>(f)), {});
  const std::string begin = "<!-- config-keys:begin -->\n", end = "<!-- config-keys:end -->";
  const auto a = readme.find(begin), b = readme.find(end);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(readme.substr(a + begin.size(), b - a - begin.size()), r.output)
      << "README.md's key table differs: paste `radstream config-keys --markdown` between the markers";
  EXPECT_NE(r.output.find("| recon.kernel_width | 4 | 2..16 |"), std::string::npos);
}

// The README works from the repository alone: no path that leaves it (a user who clones it has no ../shared).
TEST(Cli, TheReadmeNamesNoPathOutsideTheRepository) {
  std::ifstream f(std::string(RADSTREAM_CONFIG_DIR) + "/../README.md");
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    EXPECT_EQ(line.find("../"), std::string::npos) << "README.md line " << n << ": " << line;
  }
  EXPECT_GT(n, 100);
}

// Reconstruction options come from the parameters' declarations: every recon key is an option, parsed and
// range-checked like the YAML (the message names the option and the value); run takes them too.
TEST(Cli, ReconOptionsAreGeneratedFromTheParameterDeclarations) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  const std::string io =
      " --traj " + dir / "t" + " --kspace " + dir / "k" + " --matrix 16 --out " + dir / "o.cfl";
  expect_failure(radstream_cmd("recon --kernel-width 40" + io), 2, "--kernel-width 40");
  expect_failure(radstream_cmd("recon --cuda-graph maybe" + io), 2, "--cuda-graph maybe");
  expect_failure(radstream_cmd("recon --fft-fused yes --fbp-filter box" + io), 2, "box");
  const auto ok = radstream_cmd(
      "recon --backend cpu --kernel-width 6 --lut-resolution 2048 --fftw-planner estimate" + io);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("W 6"), std::string::npos) << ok.output;
  expect_failure(radstream_cmd("run --headless --duration 0.1 --dcf magic"), 2, "--dcf magic");
  expect_failure(radstream_cmd("recon --no-such-option 1" + io), 2, "no-such-option");
}

// Real radial data into the stream. A BART .cfl pair converted to an MRD stream file reconstructs
// to the same image as the pair itself (so the file carries every spoke's trajectory, data and order), replay
// recognizes it as a radstream stream and paces it by its --rate, and an existing output is never replaced
// without --overwrite. The real cardiac set goes the same way when its folder is present.
TEST(Cli, ConvertTurnsABartPairIntoAStreamFileThatReconstructsTheSame) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  test::bart(dir, "traj -r -x 128 -y 41 traj_os");
  test::bart(dir, "scale 0.5 traj_os traj");
  test::bart(dir, "phantom -k -s 4 -t traj ksp");
  const std::string pair = "--traj " + dir / "traj" + " --kspace " + dir / "ksp" + " --matrix 64";
  auto r = radstream_cmd("convert " + pair + " --rate 200 --repeat 3 --out " + dir / "s.h5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("123 spokes"), std::string::npos) << r.output;
  expect_failure(radstream_cmd("convert " + pair + " --out " + dir / "s.h5"), 2, "--overwrite");
  r = radstream_cmd("recon --backend cpu " + pair + " --out " + dir / "a.cfl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = radstream_cmd("recon --backend cpu --input " + dir / "s.h5" + " --start 41 --count 41 --out " +
                    dir / "b.cfl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto a = read_cfl(dir / "a.cfl").data, b = read_cfl(dir / "b.cfl").data;
  const double e = test::rel_error(b, a);
  std::printf("converted stream file vs the BART pair: %.3g\n", e);
  EXPECT_LE(e, 1e-6);
  // Replayed at its own pace: 123 spokes at 200/s take ~0.6 s.
  const auto t0 = std::chrono::steady_clock::now();
  r = radstream_cmd("replay " + dir / "s.h5" + " --no-wait --endpoint tcp://127.0.0.1:26411");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("foreign"), std::string::npos) << r.output;
  std::printf("replay of 123 spokes at 200/s: %.2f s\n", s);
  EXPECT_GT(s, 0.55);
  ASSERT_TRUE(std::filesystem::exists(test::real_data("cardiac-25spokes-12coils")));  // shipped in tests/data
  const auto src = test::real_data("cardiac-25spokes-12coils");
  r = radstream_cmd("convert --traj " + (src / "traj").string() + " --kspace " + (src / "ksp").string() +
                    " --matrix 256 --repeat 4 --out " + dir / "cardiac.h5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("100 spokes"), std::string::npos) << r.output;
}

// The output path is checked before any work; NaN in a .cfl is an error naming it
// (exit 3), never a NaN image with exit 0.
TEST(Cli, BadOutputPathsAndNonFiniteInputAreRefusedUpFront) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  const std::string pair =
      "recon --backend cpu --traj " + dir / "t" + " --kspace " + dir / "k" + " --matrix 8";
  expect_failure(radstream_cmd(pair + " --out " + dir / "nofolder/x.cfl"), 3, "does not exist");
  expect_failure(radstream_cmd(pair + " --out " + dir / "x.jpg"), 2, "must end in .cfl or .png");
  auto k = read_cfl(dir / "k");
  k.data[5] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0.f);
  write_cfl(dir / "k", k.dims, k.data);
  expect_failure(radstream_cmd(pair + " --out " + dir / "x.cfl"), 3, "NaN or Inf");
}

// Every command checks its outputs before any work, names the option and the path, and an
// HDF5 failure is one line (libismrmrd used to print the HDF5 error stack, then radstream the same stack
// again).
TEST(Cli, EveryCommandChecksItsOutputsBeforeAnyWork) {
  test::TempDir dir;
  const std::string sim = "simulate --spokes 16 --matrix 32 --coils 2 --out ";
  ASSERT_EQ(radstream_cmd(sim + dir / "s.h5").exit_code, 0);
  const auto size = std::filesystem::file_size(dir / "s.h5");
  expect_failure(radstream_cmd(sim + dir / "s.h5"), 2, "--overwrite");  // never replaced silently
  EXPECT_EQ(std::filesystem::file_size(dir / "s.h5"), size);
  EXPECT_EQ(
      radstream_cmd("simulate --spokes 32 --matrix 32 --coils 2 --overwrite --out " + dir / "s.h5").exit_code,
      0);
  EXPECT_GT(std::filesystem::file_size(dir / "s.h5"), size);
  EXPECT_EQ(radstream_cmd(sim + dir / "made/for/it/s.h5").exit_code, 0);  // folders are made
  const auto bad = radstream_cmd(sim + "/proc/radstream-test/s.h5");
  expect_failure(bad, 3, "--out /proc/radstream-test/s.h5");
  EXPECT_EQ(bad.output.find("HDF5 Error"), std::string::npos) << bad.output;
  EXPECT_LE(std::count(bad.output.begin(), bad.output.end(), '\n'), 2) << bad.output;
  // Before minutes of benchmark cases or a whole run, not after.
  const auto t0 = std::chrono::steady_clock::now();
  expect_failure(radstream_cmd("bench --case R1 --backend cpu --out /proc/radstream-test/b.json"), 3,
                 "--out /proc/radstream-test/b.json");
  expect_failure(radstream_cmd("run --headless --duration 30 --endpoint tcp://127.0.0.1:26421 --metrics-json "
                               "/proc/radstream-test/m.json"),
                 3, "--metrics-json /proc/radstream-test/m.json");
  expect_failure(radstream_cmd("run --headless --duration 30 --endpoint tcp://127.0.0.1:26422 --images "
                               "/proc/radstream-test/img"),
                 3, "--images /proc/radstream-test/img");
  expect_failure(radstream_cmd("demo --headless --out-dir /proc/radstream-test/demo"), 3, "--out-dir");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  // A folder where a file is meant.
  expect_failure(radstream_cmd("bench --case R1 --backend cpu --out " + dir.path().string()), 2,
                 "is a folder");
}

// One orientation. The .png and the .cfl of the same reconstruction agree pixel for pixel:
// PNG column = x = cfl dim 0, PNG row = y = cfl dim 1 (an asymmetric image, so a transpose would show).
TEST(Cli, PngAndCflOutputsShareOneOrientation) {
  test::TempDir dir;
  auto r = radstream_cmd("simulate --out " + dir / "s.h5" + " --spokes 96 --matrix 48 --coils 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* out : {"x.cfl", "x.png"}) {
    r = radstream_cmd("recon --backend cpu --input " + dir / "s.h5" + " --out " + dir / out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto cfl = read_cfl(dir / "x.cfl");
  ASSERT_EQ(cfl.dim(0), 48);
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load((dir / "x.png").c_str(), &w, &h, &ch, 1);
  ASSERT_NE(px, nullptr);
  ASSERT_EQ(w, 48);
  ASSERT_EQ(h, 48);
  // Correlation of the PNG with the cfl as is, and with its transpose.
  auto corr = [&](bool transpose) {
    double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
    const int n = 48 * 48;
    for (int y = 0; y < 48; ++y)
      for (int x = 0; x < 48; ++x) {
        const double a = px[y * 48 + x];
        const double b = std::abs(cfl.data[transpose ? std::size_t(x) * 48 + y : std::size_t(y) * 48 + x]);
        sa += a, sb += b, saa += a * a, sbb += b * b, sab += a * b;
      }
    return (sab / n - sa / n * sb / n) / std::sqrt((saa / n - sa * sa / n / n) * (sbb / n - sb * sb / n / n));
  };
  const double same = corr(false), transposed = corr(true);
  stbi_image_free(px);
  std::printf("png vs cfl: correlation %.4f as is, %.4f transposed\n", same, transposed);
  EXPECT_GT(same, 0.99);
  EXPECT_LT(transposed, same - 0.05);
}

// Every option of every command comes from a declaration (a params struct's visit(),
// app/declared_options.hpp): the generated options sit in "<section> settings" groups of the help, so any
// option in the plain "Options:" group other than --help was added by hand. The subcommands are read from the
// program's own help.
TEST(Cli, EveryOptionComesFromADeclaration) {
  const auto top = radstream_cmd("--help");
  ASSERT_EQ(top.exit_code, 0) << top.output;
  std::vector<std::string> subs;
  std::istringstream in(top.output);
  std::string line;
  bool in_subs = false;
  while (std::getline(in, line)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_subs = true;
      continue;
    }
    if (in_subs && line.size() > 2 && line[0] == ' ' && line[2] != ' ')
      subs.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  ASSERT_GE(subs.size(), 13u) << top.output;
  std::size_t declared = 0;
  subs.insert(subs.begin(), "");  // the program's own options (--version, --log-level) first
  for (const std::string& sub : subs) {
    const auto h = radstream_cmd(sub + " --help");
    ASSERT_EQ(h.exit_code, 0) << sub << ":\n" << h.output;
    std::istringstream hs(h.output);
    std::string group;
    while (std::getline(hs, line)) {
      if (!line.empty() && line[0] != ' ' && line.back() == ':') {
        group = line;
        continue;
      }
      if (group == "Subcommands:" || line.rfind("  -", 0) != 0) continue;
      if (group.ends_with(" settings:")) {
        ++declared;
        continue;
      }
      EXPECT_NE(line.find("--help"), std::string::npos)
          << sub << ": an option not generated from a declaration (group '" << group << "'): " << line;
    }
  }
  std::printf("%zu subcommands, %zu declared options\n", subs.size(), declared);
  EXPECT_GE(declared, 150u);
}

// recon --matrix 0 is named as a bad size, not as a missing option.
TEST(Cli, MatrixZeroIsABadSizeNotAMissingOption) {
  test::TempDir dir;
  write_small_bart_pair(dir);
  const std::string io = " --traj " + dir / "t" + " --kspace " + dir / "k" + " --out " + dir / "o.cfl";
  expect_failure(radstream_cmd("recon --matrix 0" + io), 2, "--matrix 0: the image matrix N must be >= 1");
  expect_failure(radstream_cmd("recon" + io), 2, "--matrix N is required");
}

// A value out of range names the option and the bound it crossed in a short line (it printed a 309-digit
// double once), and a window larger than the spoke ring is refused at start-up, naming both numbers (2000
// spokes then gave 0 frames without a word).
TEST(Cli, ARangeErrorNamesTheOptionAndItsBoundAndAWindowOverTheRingIsRefused) {
  const auto r = radstream_cmd("run --headless --window 0 --duration 1");
  expect_failure(r, 2, "--window");
  expect_failure(r, 2, ">= 1");
  const auto line = r.output.substr(r.output.find("--window"));
  EXPECT_LT(line.substr(0, line.find('\n')).size(), 120u) << line;
  expect_failure(radstream_cmd("run --headless --window 2000 --duration 1"), 2,
                 "--window 2000 is above frames.max_window 1024");
  expect_failure(radstream_cmd("run --headless --window 5000 --max-window 4096 --duration 1"), 2,
                 "--window 5000 is above frames.max_window 4096");
  expect_failure(radstream_cmd("run --headless --stale-after -1 --duration 1"), 2, ">= 0");
  expect_failure(radstream_cmd("run --headless --window foo --duration 1"), 2, "'foo' is not an integer");
  expect_failure(radstream_cmd("run --headless --stale-after abc --duration 1"), 2, "'abc' is not a number");
}

// A bad phantom setting is refused before demo writes anything into its output folder.
TEST(Cli, DemoRefusesABadAngleSchemeBeforeWritingAnything) {
  test::TempDir dir;
  expect_failure(radstream_cmd("demo --headless --angles foo --out-dir " + dir / "d"), 2, "--angles foo");
  EXPECT_FALSE(std::filesystem::exists(dir / "d/metrics.json"));
}

// simulate --out honours --duration: D seconds at --rate are D x rate spokes in the file; with --spokes as
// well it is refused, naming both.
TEST(Cli, SimulateOutWritesTheSpokesOfItsDuration) {
  test::TempDir dir;
  const auto r =
      radstream_cmd("simulate --out " + dir / "d.h5" + " --duration 0.5 --rate 400 --matrix 32 --coils 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_mrd(dir / "d.h5").spokes.size(), 200u);
  expect_failure(radstream_cmd("simulate --out " + dir / "e.h5" + " --duration 1 --spokes 10 --matrix 32"), 2,
                 "--spokes and --duration");
}

// The program's options are declared too and work after the subcommand: recon --log-level warn quiets the
// info lines; a bad level is named.
TEST(Cli, TheLogLevelIsTakenAfterTheSubcommandToo) {
  const auto top = radstream_cmd("--help");
  EXPECT_NE(top.output.find("program settings:"), std::string::npos) << top.output;
  const auto bad = radstream_cmd("recon --log-level loud --out x.png");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("'loud'"), std::string::npos) << bad.output;
  const auto quiet =
      radstream_cmd("recon --log-level warn --method fhd --traj a.cfl --kspace b.cfl --out x.png");
  EXPECT_EQ(quiet.output.find("not expected"), std::string::npos) << quiet.output;
  EXPECT_EQ(quiet.output.find("[info]"), std::string::npos) << quiet.output;
  const auto v = radstream_cmd("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find("radstream 0.1.0 (commit "), std::string::npos) << v.output;
}

// The soft descriptor limit is raised to the hard one at start-up (a receiver's connections, recordings and
// outputs all take descriptors).
TEST(Cli, TheSoftDescriptorLimitIsRaisedAtStartUp) {
  const auto r = test::run_command("bash -c 'ulimit -Sn 300; ulimit -Hn 4096; " + test::radstream_binary() +
                                   " --log-level debug config-keys 2>&1 | head -3'");
  EXPECT_NE(r.output.find("descriptors: soft limit raised from 300 to 4096"), std::string::npos) << r.output;
}

// --method has one meaning everywhere: fhd and cg-exact are values of the declared recon.method (no routing
// on the raw string), taken by recon, refused by the streaming commands with the reason, and their iterations
// and lambda are the declared cg keys (range-checked by the same reader, not parsed by hand).
TEST(Cli, TheExactMethodsAreDeclaredMethodsOfRecon) {
  const auto keys = radstream_cmd("config-keys");
  EXPECT_NE(keys.output.find("one of gridding | fbp | cg-sense | fhd | cg-exact"), std::string::npos)
      << keys.output;
  for (const char* cmd : {"run --method fhd", "demo --method cg-exact"}) {
    const auto r = radstream_cmd(cmd);
    EXPECT_NE(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("is the exact path, offline only: radstream recon --method"), std::string::npos)
        << cmd << ":\n"
        << r.output;
  }
  const test::TempDir dir;
  const auto bad =
      radstream_cmd("recon --method cg-exact --iterations 0 --traj a.cfl --kspace b.cfl --matrix 8 --out " +
                    (dir / "x.cfl"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("recon.iterations"), std::string::npos) << bad.output;
  const auto lam = radstream_cmd(
      "recon --method fhd --lambda x --traj a.cfl --kspace b.cfl --matrix 8 --out " + (dir / "x.cfl"));
  EXPECT_NE(lam.exit_code, 0);
  EXPECT_NE(lam.output.find("--lambda"), std::string::npos) << lam.output;
}

// --help says what each value is: whole numbers INT, durations by their unit (SECONDS, MS), other numbers
// FLOAT, names from a list CHOICE (they all read TEXT before), under "<section> settings" headers.
TEST(Cli, HelpShowsEachValuesType) {
  const auto h = radstream_cmd("run --help");
  ASSERT_EQ(h.exit_code, 0) << h.output;
  for (const char* want : {"--window INT", "--sender-timeout-s SECONDS", "--lambda FLOAT", "--method CHOICE",
                           "--deadline-ms MS", "stream settings:", "recon settings:"})
    EXPECT_NE(h.output.find(want), std::string::npos) << want << " in:\n" << h.output;
  EXPECT_EQ(h.output.find("Declared:"), std::string::npos) << h.output;
  EXPECT_EQ(h.output.find("--window TEXT"), std::string::npos) << h.output;
}

// The demo starts with the object preset (its phantom's bright rim would squeeze the tissue into dark grey
// under auto); run keeps auto.
TEST(Cli, TheDemoStartsWithTheObjectPreset) {
  const auto d = radstream_cmd("demo --help"), r = radstream_cmd("run --help");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("auto | object | full (default object)"), std::string::npos) << d.output;
  EXPECT_NE(r.output.find("auto | object | full (default auto)"), std::string::npos) << r.output;
}

namespace {

// The seconds of each "[HH:MM:SS.mmm]" log line's stamp.
std::vector<double> line_times(const std::string& out) {
  std::vector<double> t;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    int h = 0, m = 0;
    double s = 0;
    if (std::sscanf(line.c_str(), "[%d:%d:%lf]", &h, &m, &s) == 3) t.push_back(h * 3600.0 + m * 60.0 + s);
  }
  return t;
}

// The longest gap between two timed lines of a command's output, in seconds (at least 3 lines asserted).
double longest_silence(const std::string& out) {
  const std::vector<double> t = line_times(out);
  EXPECT_GE(t.size(), 3u) << out;
  double worst = 0;
  for (std::size_t i = 1; i < t.size(); ++i) worst = std::max(worst, t[i] - t[i - 1]);
  return worst;
}

}  // namespace

// No silent run: NLINV of the real cardiac frame on the CPU (about 12 s here) says where it is at least every
// 2 s (the frame, its Newton step, the CG iterations), instead of one line after a long silence.
TEST(Cli, ASlowReconstructionIsNeverSilentForTwoSeconds) {
  test::TempDir dir;
  const auto src = test::real_data("cardiac-25spokes-12coils");
  ASSERT_TRUE(std::filesystem::exists(src));  // shipped in tests/data
  const auto r =
      radstream_cmd("recon --backend cpu --traj " + (src / "traj").string() + " --kspace " +
                    (src / "ksp").string() + " --matrix 256 --method nlinv --out " + dir / "nl.cfl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LE(longest_silence(r.output), 2.0) << r.output;
  const std::vector<double> t = line_times(r.output);
  if (t.size() > 1 &&
      t.back() - t.front() > 3.0) {  // a slow machine's frame: the progress lines say where the solve is
    EXPECT_NE(r.output.find("still reconstructing frame 1/1"), std::string::npos) << r.output;
  }
  EXPECT_NE(r.output.find("Newton step"), std::string::npos) << r.output;
}

// CG-SENSE on the CPU says which iteration it is at and its residual while it solves (60 iterations of the
// real cardiac frame: several seconds here), never silent for 2 s.
TEST(Cli, ACgSenseSolveSaysItsIterationAndResidualWhileItRuns) {
  test::TempDir dir;
  const auto src = test::real_data("cardiac-25spokes-12coils");
  ASSERT_TRUE(std::filesystem::exists(src));  // shipped in tests/data
  const auto r = radstream_cmd("recon --backend cpu --traj " + (src / "traj").string() + " --kspace " +
                               (src / "ksp").string() +
                               " --matrix 256 --method cg-sense --iterations 60 --out " + dir / "cg.cfl");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LE(longest_silence(r.output), 2.0) << r.output;
  const auto at = r.output.find("stage cg_sense (CG iteration ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_NE(r.output.find("of 60, relative residual ", at), std::string::npos) << r.output;
}

// A slow frame keeps the status line's rhythm ("frame at spoke N in flight S s"); Ctrl-C says what the stop
// waits for, and a second Ctrl-C stops at once (exit 130) instead of waiting for the frame.
TEST(Cli, ASecondCtrlCStopsAtOnceAndTheStatusLineSaysWhatIsInFlight) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  ASSERT_EQ(
      radstream_cmd("simulate --out " + dir / "rec.h5" + " --spokes 100 --matrix 32 --coils 3").exit_code, 0);
  const std::string cmd =
      "(RADSTREAM_TEST_FRAME_DELAY_MS=20000 " + bin +
      " run --headless --endpoint tcp://127.0.0.1:26470 --window 32 --stride 32 --no-skip > " +
      dir / "run.log" + " 2>&1 & pid=$!; sleep 1; " + bin + " replay " + dir / "rec.h5" +
      " --endpoint tcp://127.0.0.1:26470 --speed max > /dev/null 2>&1; sleep 3; kill -INT $pid; sleep 0.5; "
      "t0=$(date +%s%N); kill -INT $pid; wait $pid; rc=$?; echo \"rc=$rc ms=$((($(date +%s%N) - t0) / "
      "1000000))\")";
  const auto r = test::run_command(cmd);
  std::ifstream lf(dir / "run.log");
  const std::string log((std::istreambuf_iterator<char>(lf)), {});
  EXPECT_NE(r.output.find("rc=130"), std::string::npos) << r.output << log;
  int ms = 99999;
  if (const auto at = r.output.find("ms="); at != std::string::npos)
    ms = std::atoi(r.output.c_str() + at + 3);
  EXPECT_LT(ms, 1000) << r.output;
  EXPECT_NE(log.find("in flight"), std::string::npos) << log;
  EXPECT_NE(log.find("interrupted; stopping: waiting for the frame at spoke 32"), std::string::npos) << log;
  EXPECT_NE(log.find("Ctrl-C again to stop at once"), std::string::npos) << log;
  EXPECT_NE(log.find("interrupted again: stopping at once (exit 130)"), std::string::npos) << log;
}

// Every duration's option names its unit (--duration-s, --wait-s, --mrd-idle-timeout-s); the old spellings
// still work for one release but --help shows only the new ones. The demo's help shows the demo's own
// defaults: no --motion (its tip always moves), and the period its pool loops in.
TEST(Cli, EveryDurationNamesItsUnitAndTheOldSpellingsStillWork) {
  const auto run = radstream_cmd("run --help"), sim = radstream_cmd("simulate --help"),
             demo = radstream_cmd("demo --help");
  for (const char* want : {"--duration-s SECONDS", "--mrd-idle-timeout-s SECONDS", "--mrd-drain-timeout-s",
                           "--stale-after-s SECONDS", "--close-after-s SECONDS"})
    EXPECT_NE(run.output.find(want), std::string::npos) << want << " in:\n" << run.output;
  for (const char* old : {"--duration ", "--mrd-idle-timeout ", "--stale-after ", "--close-after "})
    EXPECT_EQ(run.output.find(old), std::string::npos) << old << " in:\n" << run.output;
  EXPECT_NE(sim.output.find("--wait-s SECONDS"), std::string::npos) << sim.output;
  EXPECT_NE(sim.output.find("--header-every-s SECONDS"), std::string::npos) << sim.output;
  EXPECT_EQ(demo.output.find("--motion "), std::string::npos) << demo.output;
  EXPECT_NE(demo.output.find("default 10.24)"), std::string::npos) << demo.output;
  test::TempDir dir;
  for (const char* spelling : {"--duration", "--duration-s"}) {  // old and new: the same run
    const auto r = radstream_cmd(std::string("run --headless --endpoint tcp://127.0.0.1:26471 ") + spelling +
                                 " 0.5 --mrd-idle-timeout 5");
    EXPECT_EQ(r.exit_code, 0) << spelling << ": " << r.output;
  }
  const auto bad = radstream_cmd("run --headless --duration -1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--duration-s"), std::string::npos) << bad.output;  // named by its new spelling
}
