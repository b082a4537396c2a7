// radstream batch's communication (cmd_batch.cpp): MPI when the build has it (Open MPI; a plain run is an
// MPI singleton of one rank), else one process. Rank 0 hands out item indices to the workers that ask;
// each request carries the asker's last result (for the progress line); a worker told "stop" sends its
// metrics. Rank 0 waits with MPI_Iprobe and short sleeps, so it does not spin on a core the workers need.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace radstream::app {

class BatchComm {
 public:
  BatchComm();   // MPI_Init (and the node-local worker index: a collective, so here)
  ~BatchComm();  // MPI_Finalize
  BatchComm(const BatchComm&) = delete;
  BatchComm& operator=(const BatchComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's string, on every rank.
  std::string broadcast(const std::string& from_root);
  // One process: the items it will do, in order.
  void set_pending(std::vector<long> pending) { pending_ = std::move(pending); }
  // A worker (or the single process): reports its last result (JSON text, or empty) and gets the next item's
  // index, or -1: stop.
  long next_item(const std::string& last_report);
  // Rank 0 with workers: hands out `pending` until every worker is told to stop; returns their metrics.
  nlohmann::ordered_json dispatch(const std::vector<long>& pending);
  void send_metrics(const std::string& json);
  // This worker's index among the workers of its node (rank 0 does not count): picks the GPU.
  int node_worker_index() const { return node_worker_; }
  // The workers on this node (rank 0 does not count): the CPU threads are shared out among them.
  int node_workers() const { return node_workers_; }

 private:
  int rank_ = 0, size_ = 1, node_worker_ = 0, node_workers_ = 1;
  std::vector<long> pending_;
  std::size_t next_ = 0;
};

}  // namespace radstream::app
