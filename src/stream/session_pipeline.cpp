#include "stream/session_pipeline.hpp"

#include <fmt/format.h>

#include "recon/registry.hpp"

namespace radstream {

std::string SessionSettings::describe() const {
  return fmt::format("{}, window {}, stride {}, {}, {}{}", to_string(recon.method), frames.window,
                     frames.stride, frames.skip_when_behind ? "latest frame" : "every frame",
                     to_string(backend), gpu >= 0 ? fmt::format(" on GPU {}", gpu) : std::string());
}

SessionPipeline::SessionPipeline(const IngestParams& stream, SessionSettings settings,
                                 const Registry& registry, std::unique_ptr<Recorder> recorder,
                                 ReconWorker::Emit emit)
    : s_(std::move(settings)),
      recorder_(std::move(recorder)),
      intake_(stream, metrics_, s_.backend == Backend::Cuda, s_.frames.max_window, recorder_.get(), s_.tag) {
  metrics_.slice_count = stream.slices;
  if (!s_.frames.skip_when_behind) intake_.keep_spokes_for_every_frame();
  intake_.set_frame_stride(s_.frames.stride);
  if (s_.gpu >= 0) intake_.set_ring_gpus(std::vector<int>(std::size_t(stream.slices), s_.gpu));
  for (int k = 0; k < stream.slices; ++k) {
    auto counted = [this, emit](std::shared_ptr<const FrameResult> f) {
      metrics_.add_frame_latency(f->last_acquired_ns, f->last_arrival_ns, f->ready_ns, f->slice);
      metrics_.slowest_frames.frame(*f, metrics_.start_ns);
      ++metrics_.frames;
      emit(std::move(f));
    };
    workers_.push_back(std::make_unique<ReconWorker>(s_.frames, s_.recon, s_.backend, registry, intake_,
                                                     metrics_, counted, k, s_.gpu, s_.tag));
  }
}

SessionPipeline::~SessionPipeline() {
  stop();
}

void SessionPipeline::start() {
  for (auto& w : workers_) w->start();
}

void SessionPipeline::stop() {
  if (stopped_) return;
  stopped_ = true;
  intake_.stop();
  for (auto& w : workers_) w->stop();
  if (recorder_) {
    recorder_->stop();
    recording_ = recorder_->status();
  }
}

bool SessionPipeline::drained() const {
  for (const auto& w : workers_)
    if (!w->drained()) return false;
  return true;
}

std::uint64_t SessionPipeline::frames_due() const {
  std::uint64_t due = 0;
  const auto W = std::uint64_t(s_.frames.window), S = std::uint64_t(s_.frames.stride);
  for (int k = 0; k < intake_.slices(); ++k) {
    const auto st = intake_.state(k);
    const std::uint64_t n = st.ring ? st.ring->count() : 0;
    if (s_.frames.framing == Framing::Rotation) {
      const auto P = std::uint64_t(std::max(1, st.header.angles.spokes_per_rotation));
      due += n / P;
    } else if (n >= W) {
      due += (n - W) / S + 1;
    }
  }
  return due;
}

std::string SessionPipeline::recording_status() const {
  return recorder_ ? (stopped_ ? recording_ : recorder_->status()) : std::string();
}

}  // namespace radstream
