#include "recon/recon_chain.hpp"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>

#include "core/coil_map_power.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "recon/coil_map_source.hpp"

namespace radstream {

int ReconChain::estimated_coil_maps(std::vector<cfloat>& host) {
  const Extents e = output(kEstimatedCoilMaps, host);
  return e.rank == 3 ? int(e[0]) : 0;
}

Extents ReconChain::output(const std::string& name, std::vector<cfloat>& host) {
  if (!configured_) return {};
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const auto& outs = specs_[i].outputs;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].name != name) continue;
      const Extents& e = outs[k].extents;
      host.resize(e.size());
      if (ctx_.backend == Backend::Cpu)
        return stages_[i]->write_output(k, View<cfloat>{host.data(), e, Location::Host}, ctx_) ? e
                                                                                               : Extents{};
      std::size_t slot = 0;
      while (slot < output_names_.size() && output_names_[slot] != name) ++slot;
      if (slot == output_names_.size()) {  // the first request: its buffer, kept for the next ones
        output_names_.push_back(name);
        d_outputs_.emplace_back(e);
      }
      DeviceBuffer<cfloat>& d = d_outputs_[slot];
      if (!stages_[i]->write_output(k, d.view(), ctx_)) return {};
      gpu::copy_to_host(host.data(), d.data(), e.size() * sizeof(cfloat), ctx_.stream);
      gpu::synchronize(ctx_.stream);
      return e;
    }
  }
  return {};
}

ReconChain::ReconChain(const ReconParams& params, Backend backend, const Registry& registry)
    : ReconChain(params, backend, registry, recipe_for(registry, params, backend)) {}

ReconChain::ReconChain(const ReconParams& params, Backend backend, const Registry& registry, Recipe recipe)
    : params_(params), recipe_(std::move(recipe)) {
  params_.validate();
  ctx_.backend = backend;
  ctx_.threads = params.threads;
  if (recipe_.steps.empty()) throw ConfigError("recipe '" + recipe_.name + "' has no steps");
  for (const auto& step : recipe_.steps) stages_.push_back(registry.create(step.stage, backend, params_));
  for (const auto& st : stages_) reads_maps_ |= st->spec().coil_maps;
  if (reads_maps_) maps_source_ = std::make_unique<CoilMapSource>(params_, false);
  if (backend == Backend::Cuda) {
    stream_ = std::make_unique<gpu::Stream>();
    ctx_.stream = stream_->get();
  }
}

ReconChain::~ReconChain() {
  if (stream_) {
    try {
      stream_->synchronize();
    } catch (const Error&) {
    }
  }
  graph_.reset();
  if (maps_source_) maps_source_->wait();
  state_.clear();
  stages_.clear();  // stages release their device resources before the stream goes
}

std::vector<std::string> ReconChain::stage_names() const {
  std::vector<std::string> out;
  for (const auto& s : stages_) out.push_back(s->name());
  return out;
}

int ReconChain::buffer_index(const std::string& name) const {
  for (std::size_t i = 0; i < buffer_names_.size(); ++i)
    if (buffer_names_[i] == name) return int(i);
  return -1;
}

void ReconChain::configure(const Geometry& g) {
  g.validate();
  configured_ = false;
  graph_.reset();  // it holds the old buffers' addresses
  buffers_.clear();
  d_buffers_.clear();
  buffer_names_.clear();
  output_of_.clear();
  d_outputs_.clear();  // the declared outputs' extents may change with the geometry
  output_names_.clear();
  const bool cuda = ctx_.backend == Backend::Cuda;
  Extents ext{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(g.samples)};
  if (cuda) {
    d_input_ = DeviceBuffer<cfloat>(ext);
    d_traj_ = DeviceBuffer<float>(Extents{std::size_t(g.spokes), std::size_t(g.samples), 2});
  }
  std::string input = "data";
  specs_.clear();
  // What each stage's set-up took (plans, tables, allocation), for the debug log: a stream's first frames
  // wait for it.
  const auto t_start = std::chrono::steady_clock::now();
  std::string setup;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const RecipeStep& step = recipe_.steps[i];
    const auto t_stage = std::chrono::steady_clock::now();
    const Extents out = stages_[i]->configure(g, ext, ctx_);
    setup += fmt::format(
        " {} {:.1f}", stages_[i]->name(),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_stage).count());
    specs_.push_back(
        stages_[i]->spec());     // after configure(): the state's extents may depend on the geometry
    if (step.output == input) {  // in place: the stage must allow it, on a buffer the chain owns
      if (i == 0 || !specs_[i].in_place || !(out == ext))
        throw ConfigError("recipe '" + recipe_.name + "': stage " + step.stage + " cannot write '" +
                          step.output + "' in place");
      output_of_.push_back(output_of_.back());
    } else {
      if (buffer_index(step.output) >= 0)
        throw ConfigError("recipe '" + recipe_.name + "': buffer '" + step.output + "' is written twice");
      if (cuda)
        d_buffers_.emplace_back(out);
      else
        buffers_.emplace_back(out);
      buffer_names_.push_back(step.output);
      output_of_.push_back(int(buffer_names_.size()) - 1);
    }
    input = step.output;
    ext = out;
  }
  if (cuda) {
    host_image_ = PinnedHostBuffer<cfloat>(ext);
    d_non_finite_ = DeviceBuffer<unsigned>(Extents{1});
    // The host copies of the coil images and the complex image are made when first asked for (a volume's
    // coil images are 0.3 GB at V2's size; most runs never ask).
    host_coils_ = HostBuffer<cfloat>();
    host_complex_ = HostBuffer<cfloat>();
  }
  need_lines_ = false;
  bool need_plan = false;
  for (const StageSpec& sp : specs_) {
    need_lines_ |= sp.spoke_lines;
    need_plan |= sp.point_plan;
  }
  cpu_plan_.reset();
  cuda_plan_.reset();
  if (need_plan) {  // one plan for the frame: the recipe's kernel on the oversampled grid
    const int G = oversampled_grid_size(g.matrix, params_.gridding.oversampling);
    const std::size_t n = std::size_t(g.spokes) * g.samples;
    if (cuda)
      cuda_plan_ = std::make_unique<NufftPlanCuda>(G, params_.gridding.kernel(), n, ctx_.stream);
    else
      cpu_plan_ =
          std::make_unique<NufftPlanCpu>(2, std::array<int, 3>{G, G, 1}, params_.gridding.kernel(), n);
  }
  if (need_lines_ && !cuda) lines_.resize(g.spokes);
  d_lines_ = DeviceBuffer<SpokeLine>();
  if (need_lines_ && cuda) {
    if (g.spokes > kMaxDeviceSpokes)
      throw ConfigError("the GPU fits at most " + std::to_string(kMaxDeviceSpokes) +
                        " spoke lines per frame; this "
                        "frame has " +
                        std::to_string(g.spokes));
    d_lines_ = DeviceBuffer<SpokeLine>(Extents{std::size_t(g.spokes)});
  }
  allocate_state();
  // Maps of another geometry cannot serve this one: the source gives new ones (a caller's maps must be given
  // again).
  if (maps_host_.size() &&
      (maps_host_.extents()[0] != std::size_t(g.coils) || maps_host_.extents()[1] != std::size_t(g.matrix))) {
    maps_host_ = HostBuffer<cfloat>();
    d_maps_ = DeviceBuffer<cfloat>();
    maps_version_ = maps_uploaded_ = 0;
    maps_peak_ = 0;
    maps_given_ = false;
    if (maps_source_) maps_source_ = std::make_unique<CoilMapSource>(params_, live_maps_);
  }
  points_off_ = need_plan ? 1 : 0;  // the point plan's set_points is timed as a step of its own, first
  timings_.assign(stages_.size() + points_off_, {});
  if (points_off_) timings_[0].stage = "set_points";
  for (std::size_t i = 0; i < stages_.size(); ++i) timings_[i + points_off_].stage = stages_[i]->name();
  if (cuda) events_.resize(timings_.size() + 1);
  g_ = g;
  configured_ = true;
  log::debug("chain '{}' configured for {} in {:.1f} ms (stages, ms:{})", recipe_.name, g.str(),
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count(),
             setup);
}

View<const cfloat> ReconChain::reconstruct(const Frame& frame) {
  if (!configured_) throw InputError("reconstruct: the chain is not configured");
  const Geometry& fg = frame.geometry;
  if (fg.coils != g_.coils || fg.spokes != g_.spokes || fg.samples != g_.samples)
    throw InputError(
        fmt::format("reconstruct: frame is {}, the chain is configured for {}", fg.str(), g_.str()));
  provide_maps(&frame);  // both backends: a caller that only calls reconstruct() (batch) gets maps too
  if (ctx_.backend == Backend::Cuda) {
    gpu::copy_to_device(d_input_.data(), frame.data.data(), frame.data.size() * sizeof(cfloat), ctx_.stream);
    gpu::copy_to_device(d_traj_.data(), frame.traj.data(), frame.traj.size() * sizeof(float), ctx_.stream);
    return finite_or_throw(run_cuda());
  }
  const FrameContext fc = context(frame.traj.view());
  View<const cfloat> in = frame.data.view();
  auto ms_since = [](auto t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  if (points_off_) {
    const auto t0 = std::chrono::steady_clock::now();
    set_points(fc);
    timings_[0].ms = ms_since(t0);
  }
  struct Running {  // the stage in progress, whatever way the loop leaves
    std::atomic<int>& at;
    ~Running() { at = -1; }
  } running{running_};
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    View<cfloat> out = buffers_[output_of_[i]].view();
    running_ = int(i + points_off_);
    stages_[i]->process(stage_context(fc, i), in, out, ctx_);
    timings_[i + points_off_].ms = ms_since(t0);
    keep_output(i, out);
    in = out;
  }
  return finite_or_throw(in);
}

std::string ReconChain::running_stage() const {
  const int i = running_.load();
  if (i < 0 || std::size_t(i) >= timings_.size()) return {};
  std::string out = timings_[std::size_t(i)].stage;
  // The stage's own word on where it is (timings_ has the point plan first when there is one).
  const int k = i - int(points_off_);
  if (k >= 0 && std::size_t(k) < stages_.size())
    if (const std::string p = stages_[std::size_t(k)]->progress(); !p.empty()) out += " (" + p + ")";
  return out;
}

bool ReconChain::last_counts_non_finite() const {
  return ctx_.backend == Backend::Cuda && !specs_.empty() && specs_.back().counts_non_finite;
}

View<const cfloat> ReconChain::finite_or_throw(View<const cfloat> image) {
  std::size_t bad = 0;
  if (last_counts_non_finite()) {  // counted on the GPU by the kernel that wrote the image
    bad = non_finite_;
  } else {
    // An IEEE float is not finite when its exponent bits are all ones: a branch-free count that vectorizes.
    for (const cfloat& v : image.span())
      bad += ((std::bit_cast<std::uint32_t>(v.real()) & 0x7f800000u) == 0x7f800000u) |
             ((std::bit_cast<std::uint32_t>(v.imag()) & 0x7f800000u) == 0x7f800000u);
  }
  if (bad == 0) return image;
  reset_state();
  throw NumericError(fmt::format(
      "the {} reconstruction gave {} non-finite pixels of its {} (a scale beyond float's range in the "
      "data, or a solver's step overflowed): frame dropped, the next frame starts cold",
      to_string(params_.method), bad, image.size()));
}

View<const cfloat> ReconChain::reconstruct_device(
    const std::function<bool(cfloat*, float*, gpu::StreamRef)>& fill, const Frame* host_frame,
    CoilMapBand* band) {
  if (!configured_) throw InputError("reconstruct: the chain is not configured");
  if (ctx_.backend != Backend::Cuda)
    throw InputError("reconstruct_device: the chain is not on the CUDA backend");
  provide_maps(host_frame, band);
  if (!fill(d_input_.data(), d_traj_.data(), ctx_.stream)) return {};
  return finite_or_throw(run_cuda());
}

FrameContext ReconChain::context(View<const float> traj) {
  FrameContext fc;
  fc.traj = traj;
  fc.number = ++number_;
  if (maps_version_) {
    fc.coil_maps.version = maps_version_;
    fc.coil_maps.peak_power = maps_peak_;
    fc.coil_maps.data = traj.loc == Location::Device ? View<const cfloat>(d_maps_.view()) : maps_host_.view();
  }
  if (need_lines_ && traj.loc != Location::Device) {
    lines_.fit(traj.span(), g_.samples);  // once for every stage of the frame
    fc.lines = &lines_;
  }
  if (need_lines_ && traj.loc == Location::Device) fc.d_lines = d_lines_.data();
  fc.cpu_plan = cpu_plan_.get();
  fc.cuda_plan = cuda_plan_.get();
  return fc;
}

FrameContext ReconChain::stage_context(const FrameContext& frame, std::size_t stage) const {
  FrameContext fc = frame;
  const StageState& st = state_[stage];
  fc.previous = st.previous;
  fc.state = std::span<const View<cfloat>>(st.views);
  if (stage + 1 == stages_.size() && ctx_.backend == Backend::Cuda && specs_[stage].counts_non_finite)
    fc.d_non_finite = const_cast<unsigned*>(d_non_finite_.data());
  return fc;
}

void ReconChain::allocate_state() {
  const bool cuda = ctx_.backend == Backend::Cuda;
  state_.clear();
  state_.resize(stages_.size());
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    StageState& st = state_[i];
    const bool keeps = specs_[i].previous_output;
    std::vector<Extents> exts;
    if (keeps) exts.push_back(cuda ? d_buffers_[output_of_[i]].extents() : buffers_[output_of_[i]].extents());
    exts.insert(exts.end(), specs_[i].state.begin(), specs_[i].state.end());
    for (std::size_t k = 0; k < exts.size(); ++k) {
      if (cuda)
        st.device.emplace_back(exts[k]);
      else
        st.host.emplace_back(exts[k]);
      const View<cfloat> v = cuda ? st.device.back().view() : st.host.back().view();
      if (keeps && k == 0)
        st.previous = v;
      else
        st.views.push_back(v);
    }
  }
  reset_state();
}

void ReconChain::reset_state() {
  for (StageState& st : state_) {
    for (auto& b : st.host) std::fill(b.begin(), b.end(), cfloat(0.f, 0.f));
    for (auto& b : st.device) gpu::memset_device(b.data(), 0, b.size() * sizeof(cfloat), ctx_.stream);
  }
  if (ctx_.stream) gpu::synchronize(ctx_.stream);
}

void ReconChain::keep_output(std::size_t stage, View<const cfloat> out) {
  cfloat* dst = state_[stage].previous.data;
  if (!dst) return;
  if (ctx_.backend == Backend::Cuda)
    gpu::copy_device(dst, out.data, out.size() * sizeof(cfloat), ctx_.stream);
  else
    std::copy(out.data, out.data + out.size(), dst);
}

void ReconChain::set_points(const FrameContext& frame) {
  const std::size_t n = std::size_t(g_.spokes) * g_.samples;
  if (frame.cpu_plan) frame.cpu_plan->set_points(frame.traj.data, n);
  if (frame.cuda_plan) frame.cuda_plan->set_points(frame.traj.data, n);
  if (frame.d_lines)  // once per frame on the GPU (on the CPU, context() fitted them)
    fit_spoke_lines_cuda(frame.traj.data, g_.spokes, g_.samples, d_lines_.data(), ctx_.stream);
}

View<const cfloat> ReconChain::run_cuda() {
  if (maps_version_ != maps_uploaded_) {  // new coil maps: to the device before the frame (same address)
    gpu::copy_to_device(d_maps_.data(), maps_host_.data(), maps_host_.size() * sizeof(cfloat), ctx_.stream);
    gpu::synchronize(ctx_.stream);  // the host copy may change after this call
    maps_uploaded_ = maps_version_;
  }
  const FrameContext fc = context(d_traj_.view());
  const View<const cfloat> in = d_input_.view();
  if (graph_allowed()) {
    if (graph_.empty() || graph_args_ == GraphArgs::Changed) {
      gpu::Graph::begin_capture(ctx_.stream);
      try {
        enqueue_stages(fc, in);
      } catch (...) {
        gpu::Graph::abort_capture(ctx_.stream);
        throw;
      }
      graph_.end_capture_update(ctx_.stream);  // new maps' lambda: the same graph, updated in place
      graph_args_ = GraphArgs::Current;
    }
    graph_.launch(ctx_.stream);
  } else {
    enqueue_stages(fc, in);
  }
  gpu::copy_to_host(host_image_.data(), d_buffers_[output_of_.back()].data(),
                    host_image_.size() * sizeof(cfloat), ctx_.stream);
  if (last_counts_non_finite())
    gpu::copy_to_host(&non_finite_, d_non_finite_.data(), sizeof(unsigned), ctx_.stream);
  gpu::synchronize(ctx_.stream);
  for (std::size_t k = 0; k < timings_.size(); ++k) timings_[k].ms = events_[k + 1].ms_since(events_[k]);
  return {host_image_.data(), host_image_.extents(), Location::Host};
}

void ReconChain::enqueue_stages(const FrameContext& frame, View<const cfloat> in) {
  events_[0].record(ctx_.stream);
  if (last_counts_non_finite()) gpu::memset_device(d_non_finite_.data(), 0, sizeof(unsigned), ctx_.stream);
  set_points(frame);  // the tile sort and the spoke lines, once per frame for every stage that needs them
  if (points_off_) events_[1].record(ctx_.stream);
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    View<cfloat> out = d_buffers_[output_of_[i]].view();
    stages_[i]->process(stage_context(frame, i), in, out, ctx_);
    events_[i + 1 + points_off_].record(ctx_.stream);
    keep_output(i, out);
    in = out;
  }
}

bool ReconChain::graph_allowed() const {
  if (!params_.cuda_graph) return false;
  for (const StageSpec& sp : specs_)
    if (!sp.capturable) return false;
  return true;
}

void ReconChain::set_live_maps(bool live) {
  live_maps_ = live;
  if (maps_source_) maps_source_ = std::make_unique<CoilMapSource>(params_, live);
}

bool ReconChain::wants_host_frame() const {
  return maps_source_ && !maps_given_ && maps_source_->wants_frame(*this);
}

double ReconChain::map_refresh_band() const {
  return maps_source_ && !maps_given_ ? maps_source_->refresh_band(*this) : 0.0;
}

void ReconChain::provide_maps(const Frame* frame, CoilMapBand* band) {
  if (maps_source_ && !maps_given_) maps_source_->update(*this, frame, band);
}

void ReconChain::fix_coil_maps(const Frame& frame) {
  provide_maps(&frame);
  if (has_coil_maps()) maps_given_ = true;
}

void ReconChain::set_coil_maps(View<const cfloat> maps) {
  install_maps(maps);
  maps_given_ = true;
}

void ReconChain::take_coil_maps(View<const cfloat> maps) {
  install_maps(maps);
}

void ReconChain::install_maps(View<const cfloat> maps) {
  if (!maps.data || maps.ext.rank != 3)
    throw InputError("coil maps: expected [coils][N][N], got " + maps.ext.str());
  if (configured_ && (maps.ext[0] != std::size_t(g_.coils) || maps.ext[1] != std::size_t(g_.matrix) ||
                      maps.ext[2] != std::size_t(g_.matrix)))
    throw InputError(fmt::format("coil maps: {} do not match the frames ({} coils, {}^2 matrix)",
                                 maps.ext.str(), g_.coils, g_.matrix));
  if (!(maps_host_.extents() == maps.ext)) {
    maps_host_ = HostBuffer<cfloat>(maps.ext);
    if (ctx_.backend == Backend::Cuda) {
      d_maps_ = DeviceBuffer<cfloat>(maps.ext);
      graph_.reset();  // it holds the old address
    }
  }
  std::copy(maps.data, maps.data + maps.size(), maps_host_.data());
  const double peak = coil_map_peak_power(maps.data, maps.ext[0], maps.ext[1] * maps.ext[2]);
  if (!(peak > 0) || !std::isfinite(peak))
    throw InputError("coil maps: all zero or not finite (sum_c |S_c|^2 peaks at " + std::to_string(peak) +
                     ")");
  // A solver's lambda scales with the peak and is a kernel argument of the captured graph: captured again and
  // updated in place before the next frame (cudaGraphExecUpdate), not instantiated anew.
  if (peak != maps_peak_) graph_args_ = GraphArgs::Changed;
  maps_peak_ = peak;
  ++maps_version_;
}

SolverStats ReconChain::solver_stats() {
  for (const auto& st : stages_) {
    const SolverStats s = st->solver_stats();
    if (s.present) return s;
  }
  return {};
}

View<const cfloat> ReconChain::coil_images() {
  const int b = buffer_index("coil_images");
  if (b < 0)
    throw InputError(
        "coil images: recipe '" + recipe_.name +
        "' does not keep them (with the fused custom-FFT tail, set fft_fused: false to keep them)");
  if (!configured_) return {};
  if (ctx_.backend == Backend::Cuda) {
    if (host_coils_.size() != d_buffers_[b].size()) host_coils_ = HostBuffer<cfloat>(d_buffers_[b].extents());
    gpu::copy_to_host(host_coils_.data(), d_buffers_[b].data(), host_coils_.size() * sizeof(cfloat),
                      ctx_.stream);
    gpu::synchronize(ctx_.stream);
    return host_coils_.view();
  }
  return buffers_[b].view();
}

View<const cfloat> ReconChain::complex_image() {
  const int b = buffer_index("solution");
  if (b < 0)
    throw InputError("complex image: recipe '" + recipe_.name +
                     "' keeps no phase (cg-sense, nlinv, or coil_combine sense with complex images)");
  if (!configured_) return {};
  if (ctx_.backend == Backend::Cuda) {
    const DeviceBuffer<cfloat>& d = d_buffers_[std::size_t(b)];
    if (host_complex_.size() != d.size()) host_complex_ = HostBuffer<cfloat>(d.extents());
    gpu::copy_to_host(host_complex_.data(), d.data(), host_complex_.size() * sizeof(cfloat), ctx_.stream);
    gpu::synchronize(ctx_.stream);
    return host_complex_.view();
  }
  return buffers_[std::size_t(b)].view();
}

}  // namespace radstream
