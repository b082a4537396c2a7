// radstream batch's runner: offline replay of many recordings under many parameter sets
// (app/batch_items.hpp), spread over MPI ranks. Under `mpirun -np N` (N >= 2) rank 0 only hands out work:
// a worker asks, rank 0 answers with the next missing item or "stop"; workers take GPUs node-locally
// (worker k of a node: GPU k mod the node's GPUs). With one rank (or a build without MPI) the process does
// every item itself. Items already done are skipped, so a rerun after a rank died makes only the missing
// ones. At the end rank 0 gathers every rank's metrics into OUT/batch-metrics.json (or --metrics).
// Exit: 0 when every item is done, 1 when some failed (each named in the log and the metrics), 2 bad options.
#include "batch/batch_run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <omp.h>

#include <fmt/format.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "batch/batch_comm.hpp"
#include "batch/batch_items.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/handles.hpp"

namespace radstream::app {
namespace fs = std::filesystem;
namespace {

// --shard I/N (a Slurm array task: I = $SLURM_ARRAY_TASK_ID, N = the array's size): this run takes the
// recordings whose position in the list mod N is I, each under every set. Empty: every item.
std::pair<int, int> parse_shard(const std::string& s) {
  if (s.empty()) return {0, 1};
  int i = -1, n = -1;
  char slash = 0, extra = 0;
  if (std::sscanf(s.c_str(), "%d%c%d%c", &i, &slash, &n, &extra) != 3 || slash != '/' || n < 1 || i < 0 ||
      i >= n)
    throw ConfigError("batch: --shard " + s + " must be I/N with 0 <= I < N (e.g. $SLURM_ARRAY_TASK_ID/8)");
  return {i, n};
}

struct Setup {
  std::vector<SweepSet> sets;
  std::vector<BatchItem> items;
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rank 0's exclusive hold on its part of OUT (two batches making the same items would race): flock on
// OUT/.batch.lock (or .batch-I-of-N.lock for a shard: shards make disjoint items).
int lock_out_dir(const std::string& out, std::pair<int, int> shard) {
  const std::string name = shard.second == 1 ? std::string(".batch.lock")
                                             : fmt::format(".batch-{}-of-{}.lock", shard.first, shard.second);
  const std::string p = (fs::path(out) / name).string();
  const int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError("batch: cannot create " + p);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw ConfigError("batch: another radstream batch is writing " + out + " (" + p + " is locked)");
  }
  return fd;
}

// A worker's loop: ask, run, report; its metrics as JSON at the end.
nlohmann::ordered_json work(BatchComm& comm, const Setup& s, const std::string& out, int device) {
  const auto t0 = std::chrono::steady_clock::now();
  // The node's cores shared out among its workers (OMP_NUM_THREADS, when set, decides instead).
  int threads = 0;
  if (!std::getenv("OMP_NUM_THREADS") && comm.node_workers() > 1) {
    threads = std::max(1, int(std::thread::hardware_concurrency()) / comm.node_workers());
    omp_set_num_threads(threads);
    log::info("batch: rank {}: {} CPU threads ({} workers on this node)", comm.rank(), threads,
              comm.node_workers());
  }
  nlohmann::ordered_json done = nlohmann::ordered_json::array(), failed = nlohmann::ordered_json::array();
  int frames = 0, count = 0;
  double busy = 0;
  std::string report;  // the last item's result, sent with the next request
  for (;;) {
    const long index = comm.next_item(report);
    if (index < 0) break;
    const BatchItem& item = s.items.at(std::size_t(index));
    const ItemResult r = run_item(item, s.sets[item.set], out, comm.rank(), count, threads);
    busy += r.seconds;
    nlohmann::ordered_json rec = {
        {"index", index}, {"id", item.id}, {"file", item.file}, {"set", s.sets[item.set].name}};
    if (r.ok) {
      ++count;
      frames += r.frames;
      rec["frames"] = r.frames;
      rec["seconds"] = r.seconds;
      done.push_back(rec);
      log::info("batch: rank {}: {} x {} -> {} ({} frames, {:.2f} s)", comm.rank(), item.file,
                s.sets[item.set].name, item.id, r.frames, r.seconds);
    } else {
      rec["error"] = r.error;
      failed.push_back(rec);
      log::error("batch: rank {}: {} x {} failed: {}", comm.rank(), item.file, s.sets[item.set].name,
                 r.error);
    }
    report = rec.dump();
  }
  const double wall = since(t0);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return {{"rank", comm.rank()},
          {"host", host},
          {"device", device},
          {"items_done", done.size()},
          {"items_failed", failed.size()},
          {"frames", frames},
          {"busy_s", busy},
          {"wall_s", wall},
          {"frames_per_s", wall > 0 ? frames / wall : 0.0},
          {"done", done},
          {"failed", failed}};
}

// A rerun adds to the metrics, never replaces them: the previous report (and the ones it kept) go under
// "previous_runs", so a rerun that finds everything done does not lose the first run's figures.
void keep_previous_runs(const std::string& path, nlohmann::ordered_json& js) {
  std::ifstream in(path);
  if (!in) return;
  nlohmann::ordered_json old = nlohmann::ordered_json::parse(in, nullptr, false);
  if (old.is_discarded() || !old.is_object()) {
    log::warn("batch: {} is not a metrics report; it is replaced", path);
    return;
  }
  nlohmann::ordered_json runs = old.contains("previous_runs") && old["previous_runs"].is_array()
                                    ? old["previous_runs"]
                                    : nlohmann::ordered_json::array();
  old.erase("previous_runs");
  runs.push_back(std::move(old));
  js["previous_runs"] = std::move(runs);
}

}  // namespace

int run_batch(const BatchRun& a, BatchComm& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  Setup s;
  std::string error;
  int lock_fd = -1;
  std::vector<long> pending;
  std::size_t already = 0, shard_items = 0;
  if (comm.rank() == 0) {  // options, the plan and the lock: checked once, before any rank works
    try {
      if (a.out.empty()) throw ConfigError("batch: --out DIR is required");
      const auto shard = parse_shard(a.shard);
      fs::create_directories(a.out);
      lock_fd = lock_out_dir(a.out, shard);
      s.sets = read_param_sweep(a.sweep);
      s.items = plan_items(expand_file_list(a.files), s.sets);
      std::set<std::string> mine;
      std::map<std::string, std::size_t> file_no;  // a shard takes whole recordings (every set of each):
      for (const auto& it : s.items) {             // the shards' work stays alike whatever the sets cost
        const std::size_t f = file_no.emplace(it.file, file_no.size()).first->second;
        if (f % std::size_t(shard.second) != std::size_t(shard.first)) continue;
        mine.insert(it.id);
        if (item_done(a.out, it))
          ++already;
        else
          pending.push_back(long(it.index));
      }
      for (const auto& e : fs::directory_iterator(a.out)) {  // this run's leftovers of a rank killed mid-item
        const std::string f = e.path().filename().string();
        if (f.size() > 17 && f[0] == '.' && f.find(".tmp.") != std::string::npos &&
            mine.count(f.substr(1, 16)))
          fs::remove(e.path());
      }
      log::info("batch: {} items ({} recordings x {} sets){}, {} already done, {} to make, {} rank(s)",
                s.items.size(), s.items.size() / s.sets.size(), s.sets.size(),
                shard.second > 1
                    ? fmt::format(", shard {}/{}: {} of them", shard.first, shard.second, mine.size())
                    : "",
                already, pending.size(), comm.size());
      shard_items = mine.size();
    } catch (const IoError& e) {  // a recording or list that cannot be read: exit 3, as everywhere
      error = std::string("3") + e.what();
    } catch (const std::exception& e) {  // a bad option or sweep: exit 2
      error = std::string("2") + e.what();
    }
  }
  error = comm.broadcast(error);
  if (!error.empty()) {
    if (comm.rank() == 0) log::error("{}", error.substr(1));
    return error[0] == '3' ? 3 : 2;
  }
  // The workers need the sets and the plan: rank 0 sends the sweep's path, each parses it; items go as text.
  nlohmann::ordered_json plan = nlohmann::ordered_json::array();
  if (comm.rank() == 0)
    for (const auto& it : s.items) plan.push_back({it.file, it.set, it.id});
  plan = nlohmann::ordered_json::parse(comm.broadcast(plan.dump()));
  if (comm.rank() != 0) {
    s.sets = read_param_sweep(a.sweep);
    for (std::size_t i = 0; i < plan.size(); ++i)
      s.items.push_back(
          {i, plan[i][0].get<std::string>(), plan[i][1].get<std::size_t>(), plan[i][2].get<std::string>()});
  }

  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  if (comm.size() == 1) {
    comm.set_pending(pending);
    ranks.push_back(work(comm, s, a.out, -1));
  } else if (comm.rank() == 0) {
    ranks = comm.dispatch(pending);  // until every worker has been told to stop; their metrics come back
  } else {
    int device = -1;
    nlohmann::ordered_json m;
    try {  // whatever happens here, rank 0 hears from this worker (it waits for every worker's metrics)
      const gpu::Availability g = gpu::query();
      if (g.available && g.device_count > 0) device = comm.node_worker_index() % g.device_count;
      std::unique_ptr<gpu::DeviceGuard> guard;
      if (device >= 0) guard = std::make_unique<gpu::DeviceGuard>(device);
      m = work(comm, s, a.out, device);
    } catch (const std::exception& e) {
      log::error("batch: rank {} stopped: {}", comm.rank(), e.what());
      m = {{"rank", comm.rank()},
           {"device", device},
           {"error", e.what()},
           {"items_done", 0},
           {"items_failed", 0},
           {"frames", 0},
           {"done", nlohmann::ordered_json::array()},
           {"failed", nlohmann::ordered_json::array()}};
    }
    comm.send_metrics(m.dump());
    return m.contains("error") ? 1 : 0;
  }

  // Rank 0: the summary.
  std::size_t done = 0, failed = 0;
  long frames = 0;
  nlohmann::ordered_json failures = nlohmann::ordered_json::array();
  for (const auto& r : ranks) {
    done += r["items_done"].get<std::size_t>();
    failed += r["items_failed"].get<std::size_t>();
    frames += r["frames"].get<long>();
    for (const auto& f : r["failed"]) failures.push_back(f);
  }
  const double wall = since(t0);
  nlohmann::ordered_json js;
  js["items"] = shard_items;
  js["shard"] = a.shard.empty() ? "0/1" : a.shard;
  js["already_done"] = already;
  js["done"] = done;
  js["failed"] = failed;
  js["missing_after"] = shard_items - already - done;
  js["ranks_total"] = comm.size();
  js["workers"] = comm.size() == 1 ? 1 : comm.size() - 1;
  js["frames"] = frames;
  js["wall_s"] = wall;
  js["frames_per_s"] = wall > 0 ? frames / wall : 0.0;
  js["failures"] = failures;
  js["ranks"] = ranks;
  const auto shard = parse_shard(a.shard);
  const std::string mname = shard.second == 1
                                ? std::string("batch-metrics.json")
                                : fmt::format("batch-metrics-{}-of-{}.json", shard.first, shard.second);
  const std::string mpath = a.metrics.empty() ? (fs::path(a.out) / mname).string() : a.metrics;
  keep_previous_runs(mpath, js);
  std::ofstream o(mpath);
  o << js.dump(2) << "\n";
  if (!o) log::error("batch: cannot write the metrics {}", mpath);
  log::info(
      "batch: {} done, {} failed, {} were done before; {} frames in {:.1f} s ({:.1f} frames/s); metrics in "
      "{}",
      done, failed, already, frames, wall, js["frames_per_s"].get<double>(), mpath);
  if (lock_fd >= 0) ::close(lock_fd);
  return failed ? 1 : 0;
}

}  // namespace radstream::app
