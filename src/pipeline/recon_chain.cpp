#include "pipeline/recon_chain.hpp"

#include <fmt/format.h>

#include <chrono>

#include "core/error.hpp"

namespace radstream {

ReconChain::ReconChain(const ReconParams& params, Backend backend, const Registry& registry)
    : params_(params) {
  params_.validate();
  ctx_.backend = backend;
  ctx_.threads = params.threads;
  const char* names[] = {"density", "gridding", "fft_inverse", "deapodize", "coil_combine"};
  for (const char* n : names) stages_.push_back(registry.create(n, backend, params_));
}

std::vector<std::string> ReconChain::stage_names() const {
  std::vector<std::string> out;
  for (const auto& s : stages_) out.push_back(s->name());
  return out;
}

void ReconChain::configure(const Geometry& g) {
  g.validate();
  configured_ = false;
  buffers_.clear();
  output_of_.clear();
  Extents ext{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(g.samples)};
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const Extents out = stages_[i]->configure(g, ext, ctx_);
    if (i > 0 && stages_[i]->in_place() && out == ext) {
      output_of_.push_back(output_of_.back());
    } else {
      buffers_.emplace_back(out);
      output_of_.push_back(int(buffers_.size()) - 1);
    }
    ext = out;
  }
  timings_.assign(stages_.size(), {});
  for (std::size_t i = 0; i < stages_.size(); ++i) timings_[i].stage = stages_[i]->name();
  g_ = g;
  configured_ = true;
}

View<const cfloat> ReconChain::reconstruct(const Frame& frame) {
  if (!configured_) throw InputError("reconstruct: the chain is not configured");
  const Geometry& fg = frame.geometry;
  if (fg.coils != g_.coils || fg.spokes != g_.spokes || fg.samples != g_.samples)
    throw InputError(
        fmt::format("reconstruct: frame is {}, the chain is configured for {}", fg.str(), g_.str()));
  StageInput in{frame.data.view(), frame.traj.view()};
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    View<cfloat> out = buffers_[output_of_[i]].view();
    stages_[i]->process(in, out, ctx_);
    timings_[i].ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    in.data = out;
  }
  return in.data;
}

View<const cfloat> ReconChain::coil_images() const {
  if (!configured_ || stages_.size() < 2) return {};
  return buffers_[output_of_[stages_.size() - 2]].view();
}

}  // namespace radstream
