// MRD over pipes (Gadgetron's --from_stream convention): `replay FILE --mrd -` writes the MRD session to
// standard output and `run --mrd-stdin` serves it as one session, its images to standard output and its logs
// to stderr. The chain gives the same images as the TCP server on the same file (read back by the test's own
// protocol client, written from the protocol's description); a stream that fails, or ends before its
// header, fails the chain with the reason on stderr and an ERR text in the output.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "stream/mrd_test_client.hpp"
#include "test_util.hpp"

using namespace radstream;
using namespace radstream::mrdtest;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

Replies read_stream_file(const std::string& path) {
  RawClient f(RawClient::FromFd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)});
  EXPECT_TRUE(f.ok()) << path;
  return f.read_until_close();
}

std::string run_options() {
  return " --mrd-config-dir " + std::string(RADSTREAM_CONFIG_DIR) +
         " --window 32 --stride 16 --no-skip --images \"\" --mrd-pixels float";
}

}  // namespace

TEST(MrdPipes, TheChainedCommandGivesTheSameImagesAsTheTcpServer) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const auto sim = test::run_command(bin + " simulate --out " + (dir / "rec.h5") +
                                     " --spokes 160 --matrix 32 --coils 3 --snr 30");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;

  // The TCP server and replay --mrd, the images stored by the client.
  const std::string server = bin + " run --headless --endpoint tcp://127.0.0.1:26283 --mrd-listen " +
                             "tcp://127.0.0.1:26284 --duration 20" + run_options() + " > " +
                             (dir / "run.log") + " 2>&1 & pid=$!; sleep 1.5; ";
  const auto tcp = test::run_command("(" + server + bin + " replay " + (dir / "rec.h5") +
                                     " --mrd tcp://127.0.0.1:26284 --config gridding --speed max "
                                     "--images-out " +
                                     (dir / "back.h5") + "; rc=$?; kill -INT $pid; wait $pid; exit $rc)");
  ASSERT_EQ(tcp.exit_code, 0) << tcp.output;

  // The same file through the chain; stderr apart from the images.
  // (In parentheses: run_command sends the command's stderr to its output, not the files named here.)
  const auto chain = test::run_command("(bash -o pipefail -c '" + bin + " replay " + (dir / "rec.h5") +
                                       " --mrd - --config gridding --speed max 2> " + (dir / "replay.err") +
                                       " | " + bin + " run --mrd-stdin" + run_options() + " > " +
                                       (dir / "images.mrd") + " 2> " + (dir / "run.err") + "')");
  ASSERT_EQ(chain.exit_code, 0) << chain.output << read_file(dir / "run.err")
                                << read_file(dir / "replay.err");
  const std::string err = read_file(dir / "run.err");
  EXPECT_NE(err.find("serving one MRD session on standard input"), std::string::npos) << err;
  EXPECT_NE(read_file(dir / "replay.err").find("to standard output"), std::string::npos);

  const Replies r = read_stream_file(dir / "images.mrd");
  EXPECT_TRUE(r.closed);
  ASSERT_EQ(r.images.size(), 9u);  // (160 - 32) / 16 + 1
  bool summary = false;
  for (const auto& t : r.texts) summary = summary || t.find("9 frames due") != std::string::npos;
  EXPECT_TRUE(summary) << ::testing::PrintToString(r.texts);

  ISMRMRD::Dataset d((dir / "back.h5").c_str(), "dataset", false);
  ASSERT_EQ(d.getNumberOfImages("images_1"), 9u);
  for (unsigned i = 0; i < 9; ++i) {
    ISMRMRD::Image<float> im;
    d.readImage("images_1", i, im);
    const std::vector<float> piped = image_values(r.images[i]);
    ASSERT_EQ(piped.size(), std::size_t(im.getNumberOfDataElements())) << "image " << i;
    float peak = 0, diff = 0;
    for (std::size_t k = 0; k < piped.size(); ++k) {
      peak = std::max(peak, std::abs(im.getDataPtr()[k]));
      diff = std::max(diff, std::abs(piped[k] - im.getDataPtr()[k]));
    }
    EXPECT_GT(peak, 0.f) << "image " << i;
    EXPECT_LE(diff, 1e-5f * peak) << "image " << i;
    EXPECT_EQ(r.images[i].head.image_index, im.getImageIndex()) << "image " << i;
  }
}

TEST(MrdPipes, AStreamThatFailsFailsTheChainAndSaysWhy) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  {  // a message id no MRD version has
    std::ofstream f(dir / "bad.mrd", std::ios::binary);
    const unsigned char b[] = {0x39, 0x05, 0, 0, 0, 0};
    f.write(reinterpret_cast<const char*>(b), sizeof b);
  }
  const auto bad =
      test::run_command("(" + bin + " run --mrd-stdin" + run_options() + " < " + (dir / "bad.mrd") + " > " +
                        (dir / "out.mrd") + " 2> " + (dir / "err") + ")");
  EXPECT_EQ(bad.exit_code, 3) << read_file(dir / "err");
  EXPECT_NE(read_file(dir / "err").find("the MRD session on standard input failed"), std::string::npos)
      << read_file(dir / "err");
  const Replies r = read_stream_file(dir / "out.mrd");
  EXPECT_TRUE(r.closed);
  ASSERT_FALSE(r.texts.empty());
  EXPECT_EQ(r.texts.back().rfind("ERR radstream:", 0), 0u) << r.texts.back();

  // An empty stream is no session: a failure, said.
  const auto empty = test::run_command("(" + bin + " run --mrd-stdin" + run_options() + " < /dev/null > " +
                                       (dir / "out2.mrd") + " 2> " + (dir / "err2") + ")");
  EXPECT_EQ(empty.exit_code, 3);
  EXPECT_NE(read_file(dir / "err2").find("ended before its XML header"), std::string::npos)
      << read_file(dir / "err2");

  // One front door per run; no images back on a pipe.
  const auto both =
      test::run_command(bin + " run --mrd-stdin --mrd-listen tcp://127.0.0.1:26285 < /dev/null");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("--mrd-stdin and --mrd-listen tcp://127.0.0.1:26285"), std::string::npos)
      << both.output;
  const auto images = test::run_command("(" + bin + " replay " + (dir / "bad.mrd") +
                                        " --mrd - --images-out " + (dir / "x.h5") + " > /dev/null)");
  EXPECT_NE(images.exit_code, 0);
  EXPECT_NE(images.output.find("--images-out needs an MRD server"), std::string::npos) << images.output;
}
