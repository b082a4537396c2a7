#include "batch/batch_comm.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"

#ifdef RADSTREAM_HAVE_MPI
#include <mpi.h>
#endif

namespace radstream::app {

#ifdef RADSTREAM_HAVE_MPI
namespace {

constexpr int kRequest = 1, kItem = 2, kMetrics = 3;

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string(call) + " failed: " + std::string(text, std::size_t(len)));
}
#define MPI_CHECK(call) check_mpi((call), #call)

void send_string(const std::string& s, int dest, int tag) {
  MPI_CHECK(MPI_Send(s.data(), int(s.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD));
}

std::string recv_string(int source, int tag, MPI_Status* status = nullptr) {
  MPI_Status st;
  MPI_CHECK(MPI_Probe(source, tag, MPI_COMM_WORLD, &st));
  int n = 0;
  MPI_CHECK(MPI_Get_count(&st, MPI_CHAR, &n));
  std::string s(std::size_t(n), '\0');
  MPI_CHECK(MPI_Recv(s.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  if (status) *status = st;
  return s;
}

}  // namespace

BatchComm::BatchComm() {
  int provided = 0;
  MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm node;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  int node_rank = 0, node_size = 1, is_root = rank_ == 0 ? 1 : 0, root_here = 0;
  MPI_CHECK(MPI_Comm_rank(node, &node_rank));
  MPI_CHECK(MPI_Comm_size(node, &node_size));
  MPI_CHECK(MPI_Allreduce(&is_root, &root_here, 1, MPI_INT, MPI_MAX, node));
  MPI_Comm_free(&node);
  node_worker_ = size_ == 1 ? 0 : node_rank - root_here;
  node_workers_ = size_ == 1 ? 1 : std::max(1, node_size - root_here);
}

BatchComm::~BatchComm() {
  MPI_Finalize();
}

std::string BatchComm::broadcast(const std::string& from_root) {
  if (size_ == 1) return from_root;
  long n = long(from_root.size());
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD));
  std::string s = rank_ == 0 ? from_root : std::string(std::size_t(n), '\0');
  MPI_CHECK(MPI_Bcast(s.data(), int(n), MPI_CHAR, 0, MPI_COMM_WORLD));
  return s;
}

long BatchComm::next_item(const std::string& last_report) {
  if (size_ == 1) return next_ < pending_.size() ? pending_[next_++] : -1;
  send_string(last_report, 0, kRequest);
  long index = -1;
  MPI_CHECK(MPI_Recv(&index, 1, MPI_LONG, 0, kItem, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  return index;
}

void BatchComm::send_metrics(const std::string& json) {
  send_string(json, 0, kMetrics);
}

nlohmann::ordered_json BatchComm::dispatch(const std::vector<long>& pending) {
  std::vector<nlohmann::ordered_json> metrics(std::size_t(size_ - 1));
  std::size_t next = 0, reported = 0;
  int active = size_ - 1;
  while (active > 0) {
    int flag = 0;
    MPI_Status st;
    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const std::string msg = recv_string(st.MPI_SOURCE, st.MPI_TAG);
    if (st.MPI_TAG == kMetrics) {
      metrics[std::size_t(st.MPI_SOURCE - 1)] = nlohmann::ordered_json::parse(msg);
      --active;
      continue;
    }
    if (!msg.empty()) log::info("batch: {}/{} items finished", ++reported, pending.size());
    const long index = next < pending.size() ? pending[next++] : -1;
    MPI_CHECK(MPI_Send(&index, 1, MPI_LONG, st.MPI_SOURCE, kItem, MPI_COMM_WORLD));
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (auto& m : metrics) out.push_back(std::move(m));
  return out;
}

#else  // one process

BatchComm::BatchComm() = default;
BatchComm::~BatchComm() = default;
std::string BatchComm::broadcast(const std::string& from_root) {
  return from_root;
}
long BatchComm::next_item(const std::string&) {
  return next_ < pending_.size() ? pending_[next_++] : -1;
}
void BatchComm::send_metrics(const std::string&) {}
nlohmann::ordered_json BatchComm::dispatch(const std::vector<long>&) {
  throw Error("batch: this build has no MPI (install openmpi-bin libopenmpi-dev and rebuild)");
}

#endif

}  // namespace radstream::app
