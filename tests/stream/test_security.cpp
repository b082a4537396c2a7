// Who may connect. CURVE with a ZAP allow-list through the real program: an allow-listed sender
// streams, a sender with another key or none is refused and counted; a non-local or wildcard bind needs CURVE
// or --insecure; ipc:// works for local use.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "ingest/protocols.hpp"
#include "io/mrd_file.hpp"
#include "recon/registry.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/curve.hpp"
#include "wire/endpoint.hpp"
#include "wire/sender.hpp"

using namespace radstream;

namespace {

test::CommandResult radstream_cmd(const std::string& args) {
  return test::run_command("timeout 60 " + test::radstream_binary() + " " + args);
}

}  // namespace

TEST(Security, CurveAdmitsOnlyTheSendersOnTheAllowList) {
  test::TempDir dir;
  for (const char* who : {"server", "client", "intruder"})
    ASSERT_EQ(radstream_cmd(std::string("keygen --out ") + (dir / who)).exit_code, 0);
  // Only the client's public key is admitted; the key pair file is private to its owner.
  std::filesystem::copy_file(dir / "client.pub", dir / "allowed");
  EXPECT_EQ(std::filesystem::status(dir / "client.key").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  EXPECT_EQ(read_curve_allow_list(dir / "allowed").size(), 1u);
  const std::string bin = test::radstream_binary(), ep = "tcp://127.0.0.1:26211";
  const std::string sim =
      bin + " simulate --endpoint " + ep + " --matrix 32 --coils 2 --spokes 200 --rate 2000 ";
  const std::string script =
      bin + " run --headless --backend cpu --endpoint " + ep + " --duration 7 --curve-key " +
      (dir / "server.key") + " --curve-clients " + (dir / "allowed") + " --metrics-json " + (dir / "m.json") +
      " > " + (dir / "run.log") + " 2>&1 & pid=$!; sleep 0.5; " + sim + "--wait 1.5 --curve-server-key " +
      (dir / "server.pub") + " --curve-key " + (dir / "intruder.key") + " 2>&1; echo INTRUDER_RC=$?; " + sim +
      "--wait 1.5 2>&1; echo PLAIN_RC=$?; " + sim + "--wait 1.5 --curve-server-key " +
      (dir / "intruder.pub") + " --curve-key " + (dir / "client.key") + " 2>&1; echo WRONGKEY_RC=$?; " + sim +
      "--wait 3 --curve-server-key " + (dir / "server.pub") + " --curve-key " + (dir / "client.key") +
      " 2>&1; echo CLIENT_RC=$?; wait $pid; cat " + (dir / "run.log");
  const auto r = test::run_command(script);
  EXPECT_NE(r.output.find("INTRUDER_RC=3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("refused this sender: its CURVE key"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("PLAIN_RC=0"), std::string::npos) << r.output;  // no CURVE: never connected
  // A wrong server key (another key pair's .pub): named as such, not as a missing receiver.
  EXPECT_NE(r.output.find("WRONGKEY_RC=3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--curve-server-key is probably not that receiver's public key"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("CLIENT_RC=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not on the CURVE allow-list"), std::string::npos) << r.output;
  // A sender without CURVE reached the receiver: it is told the receiver uses CURVE, not "no receiver".
  EXPECT_NE(r.output.find("the receiver uses CURVE: give --curve-server-key"), std::string::npos) << r.output;
  std::ifstream mf(dir / "m.json");
  const auto m = nlohmann::json::parse(mf);
  EXPECT_EQ(m.at("spokes").get<int>(), 200) << "only the allow-listed sender's spokes";
  EXPECT_GE(m.at("peers").at("auth_denied").get<int>(), 1);
  EXPECT_GE(m.at("peers").at("handshake_failures").get<int>(), 2);
}

TEST(Security, ANonLocalBindNeedsCurveOrInsecureAndIpcWorksLocally) {
  test::TempDir dir;
  auto r = radstream_cmd("run --headless --backend cpu --endpoint tcp://*:26212 --duration 0.3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("reachable from other hosts and CURVE is off"), std::string::npos) << r.output;
  r = radstream_cmd(
      "run --headless --backend cpu --endpoint tcp://0.0.0.0:26212 --publish tcp://127.0.0.1:26213 "
      "--duration 0.3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = radstream_cmd(
      "run --headless --backend cpu --endpoint tcp://127.0.0.1:26212 --publish tcp://*:26213 "
      "--duration 0.3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("could read the images"), std::string::npos) << r.output;
  r = radstream_cmd("run --headless --backend cpu --endpoint tcp://*:26212 --insecure --duration 0.3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("open to other hosts without authentication"), std::string::npos) << r.output;
  ASSERT_EQ(radstream_cmd("keygen --out " + (dir / "s")).exit_code, 0);
  { std::ofstream(dir / "allowed") << "# nobody yet\n"; }
  r = radstream_cmd("run --headless --backend cpu --endpoint tcp://*:26212 --curve-key " + (dir / "s.key") +
                    " --curve-clients " + (dir / "allowed") + " --duration 0.3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("lists no public key"), std::string::npos) << r.output;
  // ipc:// (a socket file, guarded by file permissions) for senders on this host.
  const std::string ep = "ipc://" + (dir / "stream.sock"), bin = test::radstream_binary();
  r = test::run_command(bin + " run --headless --backend cpu --endpoint " + ep +
                        " --until-close --duration 20 " + "--metrics-json " + (dir / "m.json") +
                        " > /dev/null 2>&1 & pid=$!; sleep 0.4; " + bin + " simulate --endpoint " + ep +
                        " --matrix 32 --coils 2 --spokes 100 --rate 2000; wait $pid;" + " echo RUN_RC=$?");
  EXPECT_NE(r.output.find("RUN_RC=0"), std::string::npos) << r.output;
  std::ifstream mf(dir / "m.json");
  EXPECT_EQ(nlohmann::json::parse(mf).at("spokes").get<int>(), 100);
}

// The image publisher under CURVE: an allow-listed subscriber receives the images, one with another key gets
// nothing (its handshake is refused and counted).
TEST(Security, OnlyAllowListedSubscribersReceiveTheImages) {
  test::TempDir dir;
  const CurveKeys server = generate_curve_keys(), viewer = generate_curve_keys(),
                  intruder = generate_curve_keys(), sender = generate_curve_keys();
  write_curve_key_files(server, dir / "server", false);
  write_curve_key_files(sender, dir / "sender", false);
  { std::ofstream(dir / "allowed") << viewer.public_key << "\n" << sender.public_key << "\n"; }
  RunConfig cfg = streamtest::small_config(26216);
  cfg.stream.curve_key = dir / "server.key";
  cfg.stream.curve_clients = dir / "allowed";
  cfg.sinks.publish = "tcp://127.0.0.1:26217";
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  zmq::context_t ctx(1);
  const auto subscriber = [&](const CurveKeys& keys) {
    zmq::socket_t sub(ctx, zmq::socket_type::sub);
    make_curve_client(sub, keys, server.public_key);
    sub.set(zmq::sockopt::subscribe, "");
    sub.set(zmq::sockopt::rcvtimeo, 3000);
    sub.set(zmq::sockopt::linger, 0);
    sub.connect(cfg.sinks.publish);
    return sub;
  };
  zmq::socket_t good = subscriber(viewer), bad = subscriber(intruder);
  p.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // handshakes and subscriptions
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  sp.curve_server_key = dir / "server.pub";
  sp.curve_key = dir / "sender.key";
  Sender s(ctx, sp, 7);
  SimParams simp;
  simp.matrix = 32;
  simp.coils = 2;
  const Simulator sim(simp);
  s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& x : sim.spokes(0, 64)) s.send_spoke(x);
  zmq::message_t h, none;
  ASSERT_TRUE(good.recv(h, zmq::recv_flags::none)) << "the allow-listed subscriber gets the image";
  EXPECT_EQ(h.size(), 64u);
  bad.set(zmq::sockopt::rcvtimeo, 500);
  EXPECT_FALSE(bad.recv(none, zmq::recv_flags::none)) << "the other key gets nothing";
  p.stop();
  EXPECT_GE(p.metrics().auth_denied.load(), 1u);
  EXPECT_EQ(p.metrics().spokes.load(), 64u);
}

// One endpoint parser for every socket of every command: ZeroMQ's source;destination form (which can bind
// every address behind a loopback-looking prefix) and anything it cannot classify are refused; a bound
// sender (simulate --bind, replay --bind) on an address other hosts can reach needs CURVE or --insecure, as
// the receiver does.
TEST(Security, EveryEndpointGoesThroughOneParserWithoutHoles) {
  test::TempDir dir;
  auto refused = [](const test::CommandResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << r.output;
  };
  refused(radstream_cmd(
              "run --headless --backend cpu --endpoint 'tcp://127.0.0.1:0;0.0.0.0:26230' --duration 0.3"),
          "source;destination");
  refused(radstream_cmd("run --headless --backend cpu --endpoint tcp://127.0.0.1:26231 --publish "
                        "'tcp://127.0.0.1:0;0.0.0.0:26232' --duration 0.3"),
          "source;destination");
  refused(radstream_cmd("run --headless --backend cpu --endpoint udp://127.0.0.1:26233 --duration 0.3"),
          "not one radstream uses");
  refused(radstream_cmd("run --headless --backend cpu --endpoint tcp://eth0:26234 --duration 0.3"),
          "reachable from other hosts");
  refused(radstream_cmd("run --headless --backend cpu --endpoint tcp://127.0.0.1 --duration 0.3"),
          "HOST:PORT");
  refused(
      radstream_cmd("simulate --bind --endpoint tcp://*:26235 --spokes 4 --no-wait --matrix 32 --coils 2"),
      "reachable from other hosts");
  refused(radstream_cmd("simulate --bind --endpoint 'tcp://127.0.0.1:0;0.0.0.0:26236' --spokes 4 --no-wait"),
          "source;destination");
  ASSERT_EQ(radstream_cmd("simulate --spokes 8 --matrix 32 --coils 2 --out " + (dir / "s.h5")).exit_code, 0);
  refused(radstream_cmd("replay " + (dir / "s.h5") + " --bind --endpoint tcp://0.0.0.0:26237 --no-wait"),
          "reachable from other hosts");
  // Loopback and an explicit --insecure still work.
  auto r = radstream_cmd(
      "simulate --bind --socket pub --endpoint tcp://127.0.0.1:26238 --spokes 4 --no-wait --matrix 32 "
      "--coils 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = radstream_cmd("replay " + (dir / "s.h5") +
                    " --bind --insecure --socket pub --endpoint tcp://*:26239 --no-wait --speed max");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("open to other hosts without authentication"), std::string::npos) << r.output;
}

namespace {
long rss_kib(const std::string& pid) {
  std::ifstream f("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
}  // namespace

// One image subscriber that sends 300,000 distinct random 16-byte subscriptions must not grow the receiver:
// a PUB socket kept them all (950,000 took it to 2.1 GB; these 300,000 added 240 MB on the previous main).
// The publisher counts the distinct topics its XPUB passes up and, past 4,096, makes the socket anew; its
// memory stays flat, the resets are counted, and a plain subscriber gets images again once the flood stops.
TEST(Security, ASubscriptionFloodDoesNotGrowTheReceiver) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const std::string pidfile = dir / "run.pid";
  test::run_command(bin + " run --headless --backend cpu --endpoint tcp://127.0.0.1:26260 --publish " +
                    "tcp://127.0.0.1:26261 --window 32 --stride 8 --duration 30 --metrics-json " +
                    (dir / "m.json") + " > " + (dir / "run.log") + " 2>&1 & echo $! > " + pidfile);
  test::run_command(bin + " simulate --endpoint tcp://127.0.0.1:26260 --matrix 32 --coils 2 --rate 400 " +
                    "--duration 28 > " + (dir / "sim.log") + " 2>&1 & echo $! > " + (dir / "sim.pid"));
  std::string pid, sim;
  std::ifstream(pidfile) >> pid;
  std::ifstream(dir / "sim.pid") >> sim;
  ASSERT_FALSE(pid.empty());
  zmq::context_t ctx(1);
  zmq::socket_t good(ctx, zmq::socket_type::sub);
  good.set(zmq::sockopt::subscribe, "");
  good.set(zmq::sockopt::rcvtimeo, 5000);
  good.connect("tcp://127.0.0.1:26261");
  zmq::message_t m;
  ASSERT_TRUE(good.recv(m)) << "no image before the flood";
  while (good.recv(m, zmq::recv_flags::dontwait)) {
  }
  const long before = rss_kib(pid);
  {
    zmq::socket_t flood(ctx, zmq::socket_type::sub);
    flood.set(zmq::sockopt::linger, 0);
    flood.set(zmq::sockopt::sndhwm, 0);  // no subscription dropped on the way
    flood.connect("tcp://127.0.0.1:26261");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // connected: each subscription goes out
    std::mt19937 rng(7);
    std::string topic(16, '\0');
    for (int i = 0; i < 300000; ++i) {  // random bytes: every trie node spans the whole byte range
      for (auto& c : topic) c = char(rng() & 0xff);
      flood.set(zmq::sockopt::subscribe, topic);
    }
    std::this_thread::sleep_for(std::chrono::seconds(4));  // the subscriptions reach the receiver
    const long after = rss_kib(pid);
    std::printf("receiver RSS %ld KiB before, %ld KiB after 300,000 subscriptions\n", before, after);
    EXPECT_LT(after - before, 64 * 1024) << "KiB";
  }
  int images = 0;
  for (int k = 0; k < 40 && images < 5 && good.recv(m); ++k) images += m.more() ? 0 : 1;
  EXPECT_GE(images, 5) << "the plain subscriber gets images again";
  test::run_command("kill " + sim + " " + pid + "; while kill -0 " + pid +
                    " 2>/dev/null; do sleep 0.1; done");
  std::ifstream mf(dir / "m.json");
  ASSERT_TRUE(mf.good()) << "no metrics";
  const auto j = nlohmann::json::parse(mf);
  EXPECT_GE(j.at("publisher_resets").get<long>(), 1);
  EXPECT_GE(j.at("subscriptions").get<long>(), 4096);
}

namespace {
// Whether this host has an IPv6 loopback to bind (containers often have IPv6 off).
bool ipv6_loopback_available() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

// Every spelling of loopback is loopback: localhost, the short IPv4 forms (127.1 is 127.0.0.1), the IPv6
// loopback however written; they need no CURVE, and a ZeroMQ socket binds them (it resolves neither
// localhost nor 127.1 by itself, and [::1] only with its ipv6 option).
TEST(Security, EveryLoopbackSpellingIsLocalAndBinds) {
  for (const char* ep : {"tcp://localhost:1", "tcp://127.1:1", "tcp://127.0.1:1", "tcp://127.0.0.1:1",
                         "tcp://127.255.255.254:1", "tcp://[::1]:1", "tcp://[0:0:0:0:0:0:0:1]:1"})
    EXPECT_TRUE(parse_endpoint(ep, "test").local) << ep;
  for (const char* ep : {"tcp://128.1:1", "tcp://127.256.0.1:1", "tcp://1.127.0.0.1:1", "tcp://[::2]:1",
                         "tcp://localhost.example.org:1", "tcp://0.0.0.0:1", "tcp://*:1"})
    EXPECT_FALSE(parse_endpoint(ep, "test").local) << ep;
  EXPECT_EQ(socket_endpoint("tcp://127.1:5555"), "tcp://127.0.0.1:5555");
  EXPECT_EQ(socket_endpoint("tcp://localhost:5555"), "tcp://127.0.0.1:5555");
  EXPECT_EQ(socket_endpoint("tcp://[::1]:5555"), "tcp://[::1]:5555");
  std::vector<std::string> spellings{"tcp://localhost:26270", "tcp://127.1:26271"};
  if (ipv6_loopback_available()) spellings.push_back("tcp://[::1]:26272");
  for (const std::string& ep : spellings) {
    const auto r = radstream_cmd("run --headless --backend cpu --endpoint '" + ep +
                                 "' --publish tcp://127.1:26273 --duration 0.3 --report-interval-s 0");
    EXPECT_EQ(r.exit_code, 0) << ep << ": " << r.output;
    const auto m =
        radstream_cmd("run --headless --backend cpu --endpoint tcp://127.0.0.1:26274 --mrd-listen '" + ep +
                      "' --duration 0.3 --report-interval-s 0");
    EXPECT_EQ(m.exit_code, 0) << ep << " (MRD): " << m.output;
  }
}
