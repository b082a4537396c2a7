// Hostile input, round three, through the real binary: a 342-byte acquisition header that promises 512 MiB
// (65535 samples x 1024 channels x 3 trajectory dimensions) costs the server and the file readers nothing
// they were not sent; the server's acquisitions are held to the pipeline's limits; a FIFO named .mrd is
// refused at once by recon, replay and convert; a stream file cut inside its first acquisition is an error,
// not an empty success.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ismrmrd/ismrmrd.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

struct Finished {
  int exit_code = -1;
  long max_rss_kib = 0;
  double seconds = 0;
};

// Runs `cmd` under /bin/sh, its output to `log`, and returns its exit code, its peak resident memory (the
// kernel's account of the child, wait4) and its wall time.
Finished run_measured(const std::string& cmd, const std::string& log) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string full = cmd + " > " + log + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", full.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Finished f;
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  f.max_rss_kib = ru.ru_maxrss;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return f;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

template <class T>
void put(std::string& b, T v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// An MRD stream: the XML header (message 3) of a small simulated stream.
std::string xml_message(const Simulator& sim) {
  const std::string xml = stream_header_to_xml(sim.header());
  std::string m;
  put<std::uint16_t>(m, 3);
  put<std::uint32_t>(m, std::uint32_t(xml.size()));
  return m + xml;
}

// An acquisition message's 2 + 340 bytes declaring samples x coils x trajectory dimensions, no body.
std::string huge_acquisition_header(const Simulator& sim, int samples, int coils, int traj_dims) {
  const auto spokes = sim.spokes(0, 1);
  const auto h = acquisition_header_bytes(spokes[0].header, samples, coils, traj_dims);
  std::string m;
  put<std::uint16_t>(m, 1008);
  m.append(reinterpret_cast<const char*>(h.data()), h.size());
  return m;
}

// A small simulated recording as an MRD stream file (simulate, then convert), its bytes; empty on failure.
std::string simulated_stream_file(const test::TempDir& dir) {
  const std::string bin = test::radstream_binary();
  if (test::run_command(bin + " simulate --spokes 16 --matrix 32 --coils 2 --out " + (dir / "s.h5"))
          .exit_code ||
      test::run_command(bin + " convert --input " + (dir / "s.h5") + " --out " + (dir / "s.mrd")).exit_code)
    return {};
  return slurp(dir / "s.mrd");
}

// `radstream run ARGS` in the background: its output in dir/run.log, then a line EXITED when it ends; its
// process id in dir/pid.
void start_run(const test::TempDir& dir, const std::string& args) {
  const std::string log = dir / "run.log";
  std::system((std::string("(") + test::radstream_binary() +
               " run --headless --backend cpu --report-interval-s 0 " + args + " > " + log +
               " 2>&1 & echo $! > " + (dir / "pid") + "; wait; echo EXITED >> " + log + ") &")
                  .c_str());
}

// A TCP connection to the loopback port, retried for up to 5 s while the server starts; -1 when none came.
int connect_to(int port) {
  for (int i = 0; i < 100; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(std::uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      timeval tv{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      return fd;
    }
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

long rss_kib(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

}  // namespace

TEST(HostileRound3, A342ByteHeaderPromising512MiBCostsTheFileReadersNothing) {
  test::TempDir dir;
  SimParams s;
  s.matrix = 32;
  s.coils = 2;
  const Simulator sim(s);
  const std::string file = xml_message(sim) + huge_acquisition_header(sim, 65535, 1024, 3);
  std::ofstream(dir / "huge.mrd", std::ios::binary) << file;
  const std::string bin = test::radstream_binary();
  for (const std::string& cmd :
       {bin + " convert --input " + (dir / "huge.mrd") + " --out " + (dir / "out.h5"),
        bin + " recon --input " + (dir / "huge.mrd") + " --matrix 32 --out " + (dir / "img.cfl")}) {
    const Finished f = run_measured(cmd, (dir / "log.txt"));
    const std::string out = slurp(dir / "log.txt");
    std::printf("%zu-byte file: exit %d, peak resident %ld KiB, %.2f s\n", file.size(), f.exit_code,
                f.max_rss_kib, f.seconds);
    EXPECT_NE(f.exit_code, 0) << out;
    EXPECT_NE(out.find("ends inside its first acquisition"), std::string::npos) << out;
    EXPECT_LT(f.max_rss_kib, 150 * 1024) << "the declared 512 MiB were allocated: " << out;
  }
}

TEST(HostileRound3, AStreamFileCutInsideItsFirstAcquisitionIsAnError) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const std::string whole = simulated_stream_file(dir);
  ASSERT_FALSE(whole.empty());
  // The XML header as the converter wrote it ends where its first acquisition (id 1008) begins.
  const std::size_t first = whole.find(std::string("\xf0\x03", 2), 6);
  ASSERT_NE(first, std::string::npos);
  std::ofstream(dir / "cut.mrd", std::ios::binary) << whole.substr(0, first + 200);
  const auto r =
      test::run_command(bin + " convert --input " + (dir / "cut.mrd") + " --out " + (dir / "cut.h5"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no complete acquisition"), std::string::npos) << r.output;
}

TEST(HostileRound3, AFifoNamedMrdIsRefusedAtOnceByEveryReader) {
  test::TempDir dir;
  const std::string fifo = (dir / "pipe.mrd");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string bin = "timeout 20 " + test::radstream_binary();
  for (const std::string& cmd : {bin + " recon --input " + fifo + " --matrix 32 --out " + (dir / "x.cfl"),
                                 bin + " replay " + fifo + " --endpoint tcp://127.0.0.1:26295 --no-wait",
                                 bin + " convert --input " + fifo + " --out " + (dir / "x.h5")}) {
    const Finished f = run_measured(cmd, (dir / "log.txt"));
    const std::string out = slurp(dir / "log.txt");
    std::printf("FIFO: exit %d in %.2f s: %s\n", f.exit_code, f.seconds, cmd.c_str());
    EXPECT_NE(f.exit_code, 0) << out;
    EXPECT_NE(f.exit_code, 124) << "hung: " << out;
    EXPECT_LT(f.seconds, 2.0) << out;
    EXPECT_NE(out.find("FIFO (named pipe), not a regular file"), std::string::npos) << out;
  }
}

// The server holds acquisitions to the pipeline's limits (stream.max_samples, stream.max_coils): the 342-byte
// header is refused when it is read, the client told why, and the server's memory does not move while a
// client that declared a large but allowed acquisition sends nothing more.
TEST(HostileRound3, AnMrdClientsDeclaredLengthsCostTheServerNothingUnsent) {
  test::TempDir dir;
  const std::string log = dir / "run.log", pidfile = dir / "pid";
  start_run(dir,
            "--endpoint tcp://127.0.0.1:26296 --mrd-listen tcp://127.0.0.1:26297 --mrd-max-sessions 2 "
            "--duration 6");
  SimParams s;
  s.matrix = 32;
  s.coils = 2;
  const Simulator sim(s);
  auto connect_client = [] { return connect_to(26297); };
  std::string config;
  put<std::uint16_t>(config, 1);
  std::string name(1024, '\0');
  std::memcpy(name.data(), "gridding", 8);
  config += name;
  const int fd = connect_client();
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int pid = std::stoi(slurp(pidfile));
  const long before = rss_kib(pid);
  // A client that declares 4096 x 64 x 3 (allowed) and stalls; another that declares 65535 x 1024 x 3.
  const std::string allowed = config + xml_message(sim) + huge_acquisition_header(sim, 4096, 64, 3);
  ASSERT_EQ(::send(fd, allowed.data(), allowed.size(), MSG_NOSIGNAL), ssize_t(allowed.size()));
  const int fd2 = connect_client();
  ASSERT_GE(fd2, 0);
  const std::string huge = config + xml_message(sim) + huge_acquisition_header(sim, 65535, 1024, 3);
  ASSERT_EQ(::send(fd2, huge.data(), huge.size(), MSG_NOSIGNAL), ssize_t(huge.size()));
  std::string reply(4096, '\0');
  std::size_t got = 0;
  for (ssize_t k; (k = ::recv(fd2, reply.data() + got, reply.size() - got, 0)) > 0;) got += std::size_t(k);
  reply.resize(got);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long after = rss_kib(pid);
  std::printf("server resident: %ld KiB before, %ld KiB with both clients' headers\n", before, after);
  EXPECT_LT(after - before, 16 * 1024) << "declared lengths allocated";
  EXPECT_NE(reply.find("ERR"), std::string::npos) << reply;
  EXPECT_NE(reply.find("number_of_samples 65535 (allowed 1..4096)"), std::string::npos) << reply;
  ::close(fd);
  ::close(fd2);
  std::string text;
  for (int i = 0; i < 200 && text.find("EXITED") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    text = slurp(log);
  }
  EXPECT_NE(text.find("EXITED"), std::string::npos) << text;
}

// XML numbers are checked as written: a reconSpace matrix of 1e9 or -64 is named as such (ISMRMRD's 16-bit
// fields made them 51712 and 65472).
TEST(HostileRound3, XmlMatricesOutOfRangeAreReportedAsWritten) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const std::string whole = simulated_stream_file(dir);
  ASSERT_FALSE(whole.empty());
  // The file opens with the XML header message: id 3, a 32-bit length, the text.
  ASSERT_EQ(whole.substr(0, 2), std::string("\x03\x00", 2));
  std::uint32_t n = 0;
  std::memcpy(&n, whole.data() + 2, 4);
  const std::string xml = whole.substr(6, n), rest = whole.substr(6 + n);
  const std::size_t recon = xml.find("<reconSpace>");
  ASSERT_NE(recon, std::string::npos);
  const std::size_t x = xml.find("<x>32</x>", recon);
  ASSERT_NE(x, std::string::npos);
  for (const std::string bad : {"1000000000", "-64", "1e9"}) {
    std::string changed = xml;
    changed.replace(x, 9, "<x>" + bad + "</x>");
    std::string file;
    put<std::uint16_t>(file, 3);
    put<std::uint32_t>(file, std::uint32_t(changed.size()));
    std::ofstream(dir / "bad.mrd", std::ios::binary) << file + changed + rest;
    const auto r =
        test::run_command(bin + " recon --input " + (dir / "bad.mrd") + " --out " + (dir / "img.cfl"));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("reconSpace/matrixSize/x is '" + bad + "'"), std::string::npos) << r.output;
  }
}

// An MRD HDF5 file whose XML header is a fixed-length string of 1 GiB (declared, never stored: the file is
// small) is refused by name at a small peak memory; it used to cost 3 GB.
TEST(HostileRound3, AFixedLengthXmlOfOneGibIsRefusedByItsDeclaredSize) {
  test::TempDir dir;
  const std::string path = dir / "xml.h5";
  {
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t g = H5Gcreate2(f, "dataset", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, std::size_t(1) << 30);
    const hid_t s = H5Screate(H5S_SCALAR);
    const hid_t d = H5Dcreate2(g, "xml", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Tclose(t);
    H5Gclose(g);
    H5Fclose(f);
  }
  EXPECT_LT(std::filesystem::file_size(path), std::uintmax_t(1) << 20);
  const Finished f = run_measured(
      test::radstream_binary() + " recon --input " + path + " --out " + (dir / "i.cfl"), dir / "log.txt");
  const std::string out = slurp(dir / "log.txt");
  std::printf("1 GiB fixed-length XML: exit %d, peak resident %ld KiB\n", f.exit_code, f.max_rss_kib);
  EXPECT_NE(f.exit_code, 0) << out;
  EXPECT_NE(out.find("fixed-length string of 1073741824 bytes"), std::string::npos) << out;
  EXPECT_LT(f.max_rss_kib, 150 * 1024);
}

// SIGINT stops `run` within a second while a client streams maximal noise acquisitions (64 coils x 4096
// samples, the pipeline's limits): each one's covariance sums are bounded by those limits and by the
// session's noise budget (a 64 MiB noise acquisition used to hold SIGINT off for 94 s).
TEST(HostileRound3, SigintStopsTheServerWithinASecondDuringNoiseScans) {
  test::TempDir dir;
  const std::string log = dir / "run.log", pidfile = dir / "pid";
  start_run(dir, "--endpoint tcp://127.0.0.1:26300 --mrd-listen tcp://127.0.0.1:26301 --duration 60");
  SimParams s;
  s.matrix = 32;
  s.coils = 2;
  const Simulator sim(s);
  const int fd = connect_to(26301);
  ASSERT_GE(fd, 0);
  const int pid = std::stoi(slurp(pidfile));
  // The header, then noise acquisitions of 64 x 4096 as fast as the server takes them, on a thread.
  Spoke noise = sim.spokes(0, 1)[0];
  noise.header.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
  const auto h = acquisition_header_bytes(noise.header, 4096, 64, 0);
  std::string one;
  put<std::uint16_t>(one, 1008);
  one.append(reinterpret_cast<const char*>(h.data()), h.size());
  std::vector<cfloat> data(std::size_t(64) * 4096, cfloat(0.01f, 0.02f));
  one.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(cfloat));
  const std::string head = xml_message(sim);
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), ssize_t(head.size()));
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    while (!stop && ::send(fd, one.data(), one.size(), MSG_NOSIGNAL) > 0) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  std::string text;
  while (text.find("EXITED") == std::string::npos &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    text = slurp(log);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stop = true;
  ::shutdown(fd, SHUT_RDWR);
  sender.join();
  ::close(fd);
  std::printf("SIGINT during maximal noise scans: the server exited after %.2f s\n", seconds);
  EXPECT_NE(text.find("EXITED"), std::string::npos) << text;
  EXPECT_LT(seconds, 1.0) << text;
}
