#include "io/mrd_check.hpp"
#include "io/mrd_stream_file.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_reader.hpp"

namespace radstream {
namespace {

// The child: reads what the parent will read; exit 0, or 3 with the reason written to `fd`.
[[noreturn]] void child_reads(const std::string& path, long start, long count, int fd) {
  int code = 0;
  std::string why;
  try {
    MrdReader reader(path);
    (void)stream_header_from_xml(reader.xml(), path);
    const std::size_t n = reader.count();
    const std::size_t first = std::min(n, std::size_t(std::max(0L, start)));
    const std::size_t end = count < 0 ? n : std::min(n, first + std::size_t(count));
    for (std::size_t i = first; i < end; ++i) (void)reader.read(i);
  } catch (const std::exception& e) {
    code = 3;
    why = e.what();
  }
  if (!why.empty()) {
    const ssize_t w = ::write(fd, why.data(), std::min<std::size_t>(why.size(), 4000));
    (void)w;
  }
  ::_exit(code);  // no destructors, no atexit handlers of the parent's program in the child
}

}  // namespace

void check_mrd_in_child(const std::string& path, long start, long count) {
  // MRD stream and MRD 2 files are read by radstream's own codecs alone (no HDF5 inside): nothing to fence
  // off.
  if (sniff_mrd_file(path) != MrdFileKind::Hdf5) return;
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  // 30 s, plus 1 s per 50 MB: far above an honest file's read time, a bound on a file made to loop.
  const double limit_s = 30.0 + (ec ? 0.0 : double(bytes) / 50e6);
  int fds[2];
  if (::pipe(fds) != 0)
    throw IoError(fmt::format("{}: cannot check the file (pipe: {})", path, std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw IoError(fmt::format("{}: cannot check the file (fork: {})", path, std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_reads(path, start, count, fds[1]);
  }
  ::close(fds[1]);
  std::string why;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  bool timed_out = false;
  for (;;) {  // the child's message, until it closes the pipe (exits) or the time is up
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[1024];
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got > 0) {
      why.append(buf, std::size_t(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    break;  // end of file: the child is gone
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw IoError(fmt::format(
        "{}: reading the file did not finish within {:.0f} s (a damaged file?); refused", path, limit_s));
  if (WIFSIGNALED(status))
    throw IoError(
        fmt::format("{}: a damaged file: reading it crashed the HDF5 library ({}) in a check process; "
                    "refused",
                    path, strsignal(WTERMSIG(status))));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw IoError(why.empty() ? fmt::format("{}: the file could not be read", path) : why);
}

}  // namespace radstream
