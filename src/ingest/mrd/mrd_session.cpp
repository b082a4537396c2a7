#include "ingest/mrd/mrd_session.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>
#include <sys/socket.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"
#include "recon/registry.hpp"
#include "stream/run_config.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/endpoint.hpp"
#include "wire/wire.hpp"

namespace radstream {

namespace {

std::uint32_t fresh_stream_id() {
  std::random_device rd;
  std::uint32_t id = 0;
  while (id == 0) id = rd();
  return id;
}

// A session the server does not take (busy, an unknown config, a stream over the limits): the client hears
// why in an ERR text, then the close; counted as refused, not failed.
struct Refusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::vector<std::byte> text_message(std::uint16_t id, const std::string& t) {
  std::vector<std::byte> b;
  mrd::append_text(b, id, t);
  return b;
}

}  // namespace

MrdSession::MrdSession(const MrdServerParams& p, StreamRuntime& rt, MrdServer& server, Fd fd,
                       std::string peer, std::uint32_t number, Fd out)
    : p_(p),
      rt_(rt),
      server_(server),
      fd_(std::move(fd)),
      pipe_out_(std::move(out)),
      peer_(std::move(peer)),
      number_(number),
      stream_id_(fresh_stream_id()),
      tag_("session " + std::to_string(number)),
      recent_(kRecent),
      recent_index_(kRecent, ~std::uint64_t(0)) {
  const RunConfig& c = rt.config();
  settings_.frames = c.frames;
  settings_.frames.skip_when_behind = p_.frames == MrdFrames::Latest;
  settings_.recon = c.recon;
  settings_.recon.keep_phase = p_.pixels == MrdPixels::Complex;
  settings_.tag = tag_;
}

MrdSession::~MrdSession() {
  forward_.reset();  // no more of the pipeline's lines for this client
  stop_ = true;
  {
    std::lock_guard l(out_m_);
    closing_ = true;
  }
  out_cv_.notify_all();
  if (reader_.joinable()) reader_.join();
  if (writer_.joinable()) writer_.join();
}

void MrdSession::start() {
  // This session's warnings and errors (its front door's and its reconstruction's lines carry its tag) go to
  // its client as WRN/ERR texts, as a FIRE server's log does; not the MRD server's own lines ("mrd: ...": its
  // faults reach it as its ERR text already) and nothing of the other sessions or the server's own stream.
  const std::string mine = tag_ + ": ";
  forward_.emplace([this, mine](bool error, std::string_view line) {
    if (line.substr(0, 4) == "mrd:" || line.substr(0, 9) == "security:" ||
        line.find(mine) == std::string_view::npos)
      return;
    queue_text(std::string(error ? "ERR" : "WRN") + " radstream: " + log::printable_line(line, 500));
  });
  writer_ = std::thread([this] { write_loop(); });
  reader_ = std::thread([this] { run(); });
}

void MrdSession::queue(Out o) {
  bool direct = false;
  {
    std::lock_guard l(out_m_);
    if (closing_ || dead_) return;
    if (o.image && out_.empty() && !writing_) {
      // Nothing queued and nothing being sent: the image goes out from this thread at once, as far as the
      // socket takes it without waiting (no wake of the writer on the way of a frame); the writer sends
      // what is left.
      writing_ = direct = true;
    } else {
      if (o.image) {
        const auto images = std::count_if(out_.begin(), out_.end(), [](const Out& x) { return x.image; });
        if (images >= p_.queue_images) {  // a slow client: the oldest image goes, counted
          for (auto it = out_.begin(); it != out_.end(); ++it)
            if (it->image && it->sent == 0) {
              out_.erase(it);
              ++rt_.metrics().mrd.images_dropped;
              break;
            }
        }
      }
      out_.push_back(std::move(o));
    }
  }
  if (direct) {
    const long k = send_now(out_fd(), o.bytes);
    if (k < 0) {
      dead_ = true;  // (counted as failed when the session ends)
      log::warn("mrd: session {} ({}): the client went away; dropped", number_, peer_);
      stop_ = true;  // its frames are abandoned at once
      hang_up();     // the reader ends too
    } else if (std::size_t(k) == o.bytes.size()) {
      sent_image(o);
    } else {
      o.sent = std::size_t(k);
      std::lock_guard l(out_m_);
      out_.push_front(std::move(o));  // first: nothing was queued, and the rest of this message goes next
    }
    std::lock_guard l(out_m_);
    writing_ = false;
  }
  out_cv_.notify_all();
}

void MrdSession::sent_image(Out& o) {
  ++rt_.metrics().mrd.images_sent;
  const std::int64_t now = monotonic_ns();
  if (o.arrival_ns > 0) rt_.metrics().mrd.arrival_to_sent.add(double(now - o.arrival_ns) * 1e-6);
  if (o.ready_ns > 0) rt_.metrics().mrd.ready_to_sent.add(double(now - o.ready_ns) * 1e-6);
  std::lock_guard l(out_m_);
  if (spare_.size() < spare_kept_) spare_.push_back(std::move(o.bytes));
}

void MrdSession::queue_text(const std::string& text) {
  // Every text to the client through the printable-line filter: an error may quote what a client sent.
  queue({text_message(mrd::kText, log::printable_line(text, 1000)), false, 0});
}

void MrdSession::write_loop() {
  try {
    for (;;) {
      Out o;
      {
        std::unique_lock l(out_m_);
        out_cv_.wait(l, [&] { return (!out_.empty() || closing_) && !writing_; });
        if (out_.empty()) return;
        o = std::move(out_.front());
        out_.pop_front();
        writing_ = true;
      }
      struct Done {  // the next message may go out directly once this one is sent
        MrdSession& s;
        ~Done() {
          std::lock_guard l(s.out_m_);
          s.writing_ = false;
        }
      };
      {
        Done done{*this};
        if (dead_) continue;
        if (!send_all(out_fd(), std::span(o.bytes).subspan(o.sent), p_.send_timeout_s)) {
          dead_ = true;  // (counted as failed when the session ends)
          log::warn("mrd: session {} ({}): the client took no data for {} s or went away; dropped", number_,
                    peer_, p_.send_timeout_s);
          stop_ = true;  // its frames are abandoned at once
          hang_up();     // the reader ends too
          continue;
        }
        if (o.image) sent_image(o);
      }
      out_cv_.notify_all();
    }
  } catch (const std::exception& e) {
    dead_ = true;
    log::error("mrd: session {} writer failed: {}", number_, e.what());
  }
}

void MrdSession::run() {
  std::string error;
  std::optional<mrd::Fault> fault;
  try {
    // No idle timer between any two messages: the session's own deadlines (the header, then an acquisition)
    // say what counts as progress; queries and texts do not.
    SocketSource src(fd_.get(), p_.message_timeout_s, 0.0, &stop_);
    serve(src);
  } catch (const Refusal& e) {  // said to the client, then closed; not a failure of the session
    log::warn("mrd: {} ({}) refused: {}", tag_, peer_, log::printable_line(e.what(), 300));
    error = e.what();
    refused_ = true;
  } catch (const mrd::ProtocolError& e) {
    fault = e.fault();
    log::warn("mrd: session {} ({}) ends: {} ({})", number_, peer_, log::printable_line(e.what(), 300),
              mrd::to_string(e.fault()));
    error = e.what();
  } catch (const std::exception& e) {
    log::error("mrd: session {} ({}) failed: {}", number_, peer_, log::printable_line(e.what(), 300));
    error = e.what();
  }
  end_session(error, fault);
}

// The session's end, whatever ended it: a vanished or faulty client's frames are abandoned at once (nothing
// more is made for nobody); its pipeline's counts join the run's; its place is free before the close is sent,
// so that a client that reconnects at once is served.
void MrdSession::end_session(const std::string& error, std::optional<mrd::Fault> fault) {
  {
    std::lock_guard l(frame_m_);
    frames_wanted_ = false;
  }
  drop_pipeline();
  rt_.session_ended(tag_);  // its column in the viewer goes with it
  memory_->release();
  auto& mm = rt_.metrics().mrd;
  if (phase_.exchange(Phase::Over) == Phase::Admitted) {
    server_.release_slot();
    admitted_ = true;
  }
  if (fault) ++mm.faults[std::size_t(*fault)];
  if (!error.empty()) {
    queue_text(fmt::format("ERR radstream: {}", error));
    std::vector<std::byte> c;
    mrd::append_close(c);
    queue({std::move(c), false, 0});
  }
  {
    std::lock_guard l(out_m_);
    closing_ = true;
  }
  out_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  // Each session counted once, when it is over: completed (its close, every message sent), failed (a fault,
  // a vanished or stalled client), or refused (counted where it was refused).
  std::string outcome = "completed";
  if (refused_) {
    outcome = "refused: " + error;
  } else if (error.empty() && !dead_) {
    if (admitted_) ++mm.sessions_completed;
  } else {
    ++mm.sessions_failed;
    outcome = "failed: " + (error.empty() ? std::string("the client went away") : error);
  }
  if (have_header_ || refused_) {  // a connection that never sent a header is no session to report
    using Summary = Metrics::Mrd::SessionSummary;
    summary_.session = number_;
    Summary::put(summary_.client, peer_);
    Summary::put(summary_.config, config_name_);
    summary_.acquisitions = sequence_;
    Summary::put(summary_.ended, log::printable_line(outcome, 150));
    mm.add_session(summary_);
  }
  hang_up();
  pipe_out_.reset();  // a pipe's reader sees the end of the stream (the writer is done)
  // (A stream that ended before its header is no session on TCP; on a pipe it is the run's failure.)
  outcome_ =
      have_header_ || refused_ || !error.empty() ? outcome : "failed: the stream ended before its XML header";
  ended_ = true;
}

void MrdSession::hang_up() {
  ::shutdown(fd_.get(), SHUT_RDWR);  // (ENOTSOCK on a pipe: its reader polls stop_)
}

void MrdSession::serve(SocketSource& src) {
  mrd::Limits lim;  // one set of limits: the pipeline's
  lim.max_samples = p_.max_samples;
  lim.max_channels = p_.max_coils;
  auto& mm = rt_.metrics().mrd;
  src.set_deadline(
      monotonic_ns() + std::int64_t(p_.header_timeout_s * 1e9),
      fmt::format("no XML header within {} s of connecting (--mrd-header-timeout-s)", p_.header_timeout_s));
  for (;;) {
    auto msg = mrd::read_message(src, lim);
    if (!msg) {
      if (have_header_)
        throw mrd::ProtocolError(mrd::Fault::Truncated, "the client went away without a close");
      log::debug("mrd: session {} ({}) ended by the client before any header", number_, peer_);
      return;
    }
    ++mm.messages;
    switch (msg->id) {
      case mrd::kConfigFile:
        count_setting("config names and texts", ++configs_, kMaxConfigs);
        select_config(msg->text, "config name");
        break;
      case mrd::kConfigText:
        count_setting("config names and texts", ++configs_, kMaxConfigs);
        select_config(msg->text, "config text");
        break;
      case mrd::kHeader:
        on_header(msg->text, src);
        break;
      case mrd::kText:
        ++mm.texts;
        count_setting("text messages", ++texts_, kMaxTexts);
        if (have_header_ && !pipe_ && !msg->text.empty() && msg->text.front() == '{')
          apply_json_settings(msg->text);
        else
          log::info("mrd: session {} text: {}", number_, log::printable_line(msg->text, 200));
        break;
      case mrd::kQuery: {
        ++mm.queries;
        std::string answer = msg->text == "ismrmrd::version" ? "1.8.0" : "radstream";
        std::vector<std::byte> b;
        mrd::append_response(b, msg->correlation_id, answer);
        queue({std::move(b), false, 0});
        break;
      }
      case mrd::kAcquisition:
        if (p_.idle_timeout_s > 0)
          src.set_deadline(monotonic_ns() + std::int64_t(p_.idle_timeout_s * 1e9),
                           fmt::format("no acquisition for {} s (--mrd-idle-timeout-s)", p_.idle_timeout_s));
        on_acquisition(msg->acq);
        break;
      case mrd::kWaveform:
        ++mm.waveforms;
        break;
      case mrd::kImage:
        ++mm.client_images;
        break;
      case mrd::kNdArray:
        ++mm.ndarrays;
        break;
      case mrd::kResponse:
        break;
      case mrd::kClose:
        finish_stream();
        return;
      default:
        break;
    }
  }
}

void MrdSession::count_setting(const char* what, int count, int limit) {
  if (count > limit)
    throw mrd::ProtocolError(
        mrd::Fault::TooLong,
        fmt::format("more than {} {} in one session (a scanner sends a few); closing", limit, what));
}

std::string MrdSession::offered_configs() const {
  std::string out;
  for (const MethodSpec& m : rt_.registry().methods().all())  // the server's methods that stream
    if (m.live) out += std::string(out.empty() ? "" : ", ") + m.name;
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(p_.config_dir, ec))
    if (f.path().extension() == ".yaml") {
      try {  // only a session's configs (recon:, frames:): the server's own files are not a client's choice
        if (is_session_config(YAML::LoadFile(f.path().string()))) files.push_back(f.path().stem().string());
      } catch (const std::exception&) {
      }
    }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) out += ", " + f;
  return out;
}

// A config (name, YAML text, or a name inside the JSON settings) sets this session's reconstruction and
// frames only; it is applied when the session's pipeline is made. An unknown name is remembered and refused
// (or served by the default config) once the header has come: a FIRE client sends its config name first and
// reads the answer only after its header.
void MrdSession::select_config(const std::string& raw, const std::string& how) {
  const std::string name = raw;
  if (name.empty() || name == "default") return;
  if (pipe_)
    throw mrd::ProtocolError(mrd::Fault::BadField,
                             fmt::format("a {} after the first acquisition (the session's reconstruction is "
                                         "set by then)",
                                         how));
  if (how == "config text") {
    try {
      take_config(session_config_from_yaml(YAML::Load(name), rt_.config(), "MRD config text"),
                  "a config text");
      return;
    } catch (const std::exception& e) {
      throw mrd::ProtocolError(
          mrd::Fault::BadField,
          fmt::format("the config text is not a radstream session configuration: {}", e.what()));
    }
  }
  if (rt_.registry().methods().find(name)) {  // a method's name (an offline one is refused with the header)
    settings_.recon.method = MethodName(name);
    config_name_ = name;
    unknown_config_.clear();
    return;
  }
  const bool plain = name.find('/') == std::string::npos && name.find("..") == std::string::npos;
  const std::string stem =
      name.size() > 5 && name.ends_with(".yaml") ? name.substr(0, name.size() - 5) : name;
  namespace fs = std::filesystem;
  const fs::path path = fs::path(p_.config_dir) / (stem + ".yaml");
  std::error_code ec;
  if (plain && fs::is_regular_file(path, ec)) {
    apply_config_file(stem);
    return;
  }
  unknown_config_ = name;
}

// A session config's reconstruction and frames; the frame policy (mrd.frames) and the phase the pixels need
// stay the server's.
void MrdSession::take_config(const SessionConfig& c, const std::string& name) {
  const bool keep_phase = settings_.recon.keep_phase, skip = settings_.frames.skip_when_behind;
  settings_.recon = c.recon;
  settings_.recon.keep_phase = keep_phase;
  settings_.frames = c.frames;
  settings_.frames.skip_when_behind = skip;
  config_name_ = name;
  unknown_config_.clear();
}

void MrdSession::apply_config_file(const std::string& stem) {
  const std::string path = (std::filesystem::path(p_.config_dir) / (stem + ".yaml")).string();
  const std::string shown = stem + ".yaml";  // a client hears the config's name, never the server's paths
  try {
    take_config(session_config_from_yaml(YAML::LoadFile(path), rt_.config(), shown), stem);
  } catch (const std::exception& e) {
    std::string why = e.what();
    for (std::size_t at; (at = why.find(path)) != std::string::npos;) why.replace(at, path.size(), shown);
    throw mrd::ProtocolError(mrd::Fault::BadField, fmt::format("config {}: {}", stem, why));
  }
}

void MrdSession::apply_json_settings(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    log::info("mrd: session {}: a text that is not JSON settings: {}", number_,
              log::printable_line(text, 200));
    return;
  }
  const auto params = j.find("parameters");
  if (params == j.end() || !params->is_object()) return;
  std::string config;
  if (auto c = params->find("config"); c != params->end() && c->is_string()) config = *c;
  if (auto c = params->find("customconfig");
      c != params->end() && c->is_string() && !c->get<std::string>().empty())
    config = *c;
  if (!config.empty()) select_config(config, "config name");
}

// The header admits the session: its config is known by then, so every refusal (an unknown config, a stream
// over the limits, no place free) is said now, as an ERR text, before the close.
void MrdSession::on_header(const std::string& xml, SocketSource& src) {
  if (have_header_) {
    log::info("mrd: {} ({}): a repeated XML header; the first one stands", tag_, peer_);
    return;
  }
  StreamHeader h;
  try {
    h = stream_header_from_xml(xml, "the MRD XML header");
  } catch (const Error& e) {
    throw mrd::ProtocolError(mrd::Fault::BadField, e.what());
  }
  auto& mm = rt_.metrics().mrd;
  const auto refuse = [&](const std::string& why) {
    ++mm.sessions_refused;
    throw Refusal(why);
  };
  if (!unknown_config_.empty()) {
    if (p_.default_config.empty())
      refuse(fmt::format("unknown config '{}': the choices are {}", unknown_config_, offered_configs()));
    queue_text(
        fmt::format("WRN radstream: unknown config '{}'; serving the default config {} (the choices "
                    "are {})",
                    unknown_config_, p_.default_config, offered_configs()));
    const std::string unknown = unknown_config_;
    select_config(p_.default_config, "config name");
    if (!unknown_config_.empty())
      refuse(fmt::format("the default config '{}' is unknown", p_.default_config));
  }
  try {  // the session's own settings, checked before it takes a place (e.g. complex images from gridding)
    settings_.recon.validate();
    rt_.registry().method(settings_.recon.method);  // a config text may name a method the server lacks
    settings_.frames.validate();
  } catch (const ConfigError& e) {
    refuse(fmt::format("config {}: {}", config_name_, e.what()));
  }
  if (h.samples > p_.max_samples || h.coils > p_.max_coils)
    refuse(
        fmt::format("the stream of {} samples x {} coils is beyond the server's limits ({} x {}: "
                    "stream.max_samples, stream.max_coils)",
                    h.samples, h.coils, p_.max_samples, p_.max_coils));
  std::string why;
  try {  // (without a coil count in the header, checked when the first acquisition gives it)
    if (h.coils > 0) why = rt_.reserve_memory(settings_, h, *memory_);
  } catch (const ConfigError& e) {
    refuse(fmt::format("config {}: {}", config_name_, e.what()));
  }
  if (!why.empty())
    refuse(
        fmt::format("the stream of matrix {}, {} samples x {} coils {}; the server's --memory-limit and "
                    "--memory-limit-total set what a session and all sessions together may take",
                    h.matrix, h.samples, h.coils, why));
  std::string busy;
  if (!server_.claim_slot(busy)) {
    ++mm.busy_refused;
    throw Refusal(busy);
  }
  phase_ = Phase::Admitted;
  ++mm.sessions_admitted;
  xml_ = xml;
  header_ = h;
  have_header_ = true;
  radstream_xml_ = xml.find("radstream_radial") != std::string::npos;
  ISMRMRD::IsmrmrdHeader x;
  ISMRMRD::deserialize(xml.c_str(), x);
  {
    std::lock_guard l(frame_m_);
    const auto& f = x.encoding[0].reconSpace.fieldOfView_mm;
    fov_[0] = f.x > 0 ? f.x : float(h.fov_mm);
    fov_[1] = f.y > 0 ? f.y : float(h.fov_mm);
    fov_[2] = f.z > 0 ? f.z : 10.f;
  }
  log::info("mrd: {} ({}): stream of {} samples x {} coils -> {}x{}", tag_, peer_, h.samples,
            h.coils ? std::to_string(h.coils) : std::string("?"), h.matrix, h.matrix);
  if (p_.idle_timeout_s > 0)
    src.set_deadline(monotonic_ns() + std::int64_t(p_.idle_timeout_s * 1e9),
                     fmt::format("no acquisition for {} s (--mrd-idle-timeout-s)", p_.idle_timeout_s));
  else
    src.set_deadline(0, {});
}

// The session's own pipeline, made when its settings are final (the first imaging acquisition, or the close
// of a stream without one), with the header's coil count (or the first acquisition's).
void MrdSession::open_pipeline() {
  std::shared_ptr<SessionPipeline> pipe;
  try {
    pipe = rt_.open_session(
        settings_, [this](std::shared_ptr<const FrameResult> f) { send_frame(std::move(f)); }, memory_);
  } catch (const ConfigError& e) {  // e.g. complex images from a method without phase
    throw mrd::ProtocolError(mrd::Fault::BadField, fmt::format("config {}: {}", config_name_, e.what()));
  }
  {
    std::lock_guard l(pipe_m_);
    pipe_ = pipe;
  }
  wire::Message m;
  m.env.type = std::uint16_t(wire::MsgType::Header);
  m.env.stream_id = stream_id_;
  m.env.sequence = sequence_;
  m.text = xml_;
  pipe->intake().header(m);
  if (!pipe->intake().has_stream())
    throw mrd::ProtocolError(mrd::Fault::BadField,
                             "the stream header was refused: " + pipe->intake().last_rejection());
  log::info("mrd: {} ({}) reconstructs with {}: {}", tag_, peer_, config_name_, pipe->settings().describe());
  queue_text(
      fmt::format("DBG radstream: reconstructing with {} ({})", config_name_, pipe->settings().describe()));
}

// Every acquisition goes to the session's front door, which conditions it (noise scans, partial echoes,
// acquisitions that are no imaging spokes: stream/spoke_conditioner.hpp) as it does a ZeroMQ stream's.
void MrdSession::on_acquisition(const mrd::Acquisition& a) {
  auto& mm = rt_.metrics().mrd;
  ++mm.acquisitions;
  if (!have_header_)
    throw mrd::ProtocolError(mrd::Fault::BadField, "an acquisition came before the XML header (message 3)");
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  std::memcpy(&h, a.head.data(), sizeof h);
  if (!pipe_) {
    if (header_.coils == 0) {  // the header named no receiver channels: the first acquisition's count
      ISMRMRD::IsmrmrdHeader x;
      ISMRMRD::deserialize(xml_.c_str(), x);
      if (!x.acquisitionSystemInformation)
        x.acquisitionSystemInformation = ISMRMRD::AcquisitionSystemInformation();
      x.acquisitionSystemInformation->receiverChannels = std::uint16_t(a.channels);
      std::ostringstream o;
      ISMRMRD::serialize(x, o);
      xml_ = o.str();
    }
    open_pipeline();
  }
  const bool imaging = SpokeConditioner::imaging(a.flags);
  // The spoke's index: radstream's own 64-bit one, else kspace_encode_step_1 unwrapped past 65535 (noise
  // and the other acquisitions that are no spokes keep the count where it is).
  if (!imaging) {
  } else if (radstream_xml_) {
    spoke_index_ = std::uint64_t(join64(h.user_int[4], h.user_int[5]));
  } else {
    const long step = h.idx.kspace_encode_step_1;
    if (last_step1_ < 0)
      spoke_index_ = std::uint64_t(step);
    else if (step < last_step1_ - 32768)
      spoke_index_ += std::uint64_t(step + 65536 - last_step1_);
    else
      spoke_index_ = std::uint64_t(std::int64_t(spoke_index_) + (step - last_step1_));
    last_step1_ = step;
  }
  if (imaging) {
    std::lock_guard l(frame_m_);
    recent_[spoke_index_ % kRecent] = a.head;
    recent_index_[spoke_index_ % kRecent] = spoke_index_;
  }
  wire::Message m;  // straight to the session's front door: nothing re-encoded
  m.env.type = std::uint16_t(wire::MsgType::Spoke);
  m.env.stream_id = stream_id_;
  m.env.sequence = imaging ? ++sequence_ : sequence_;
  m.env.spoke_index = spoke_index_;
  m.head.scan_counter = h.scan_counter;
  m.head.flags = h.flags;
  m.head.acquisition_time_stamp = h.acquisition_time_stamp;
  m.head.slice = h.idx.slice;
  m.head.partition = h.idx.kspace_encode_step_2;
  m.head.spoke_index = spoke_index_;
  m.head.acquired_ns = monotonic_ns();  // its arrival: a scanner's time stamps are not this machine's clock
  m.head.sent_ns = m.head.acquired_ns;
  m.head.angle = std::nan("");
  m.samples = a.samples;
  m.coils = a.channels;
  m.traj_dims = a.traj_dims;
  m.traj = std::as_bytes(std::span(a.traj));
  m.data = std::as_bytes(std::span(a.data));
  using Kind = SpokeConditioner::Kind;
  const Kind kind = pipe_->intake().spoke(m, std::span<const std::byte>(a.head.data(), a.head.size()));
  if (kind == Kind::Noise || kind == Kind::NoiseOverBudget) ++mm.noise;
  if (kind == Kind::NonImaging) ++mm.non_imaging;
  warn_if_behind();
}

// A session that cannot keep up hears it, at most once a second, with the counts.
void MrdSession::warn_if_behind() {
  const std::int64_t now = monotonic_ns();
  if (now - behind_told_ns_ < 1'000'000'000) return;
  const std::uint64_t due = pipe_->frames_due(), made = pipe_->frames_made() + pipe_->frames_lost();
  if (due <= made + 2) return;  // a frame in flight and one waiting are keeping up
  behind_told_ns_ = now;
  queue_text(
      fmt::format("WRN radstream: the reconstruction is behind: {} frames due, {} made, {} behind "
                  "({})",
                  due, pipe_->frames_made(), due - made,
                  p_.frames == MrdFrames::All ? "every frame will come; the acquisitions wait"
                                              : "the newest frame wins; some are skipped"));
}

void MrdSession::drop_pipeline() {
  std::shared_ptr<SessionPipeline> pipe;
  {
    std::lock_guard l(pipe_m_);
    pipe = std::move(pipe_);
  }
  if (!pipe) return;
  using Summary = Metrics::Mrd::SessionSummary;
  Summary::put(summary_.settings, pipe->settings().describe());
  summary_.frames_due = pipe->frames_due();
  summary_.frames_made = pipe->frames_made();
  summary_.frames_sent = frames_sent_.load();
  pipe->stop();
  summary_.spokes = pipe->intake().spokes_taken();
  summary_.rejected = pipe->metrics().rejected_total();
  const Percentiles arrival = pipe->metrics().arrival.summary();
  summary_.arrival_to_ready_p50_ms = arrival.p50;
  summary_.arrival_to_ready_p99_ms = arrival.p99;
  rt_.absorb(pipe->metrics());
}

std::string MrdSession::counts() const {
  std::shared_ptr<SessionPipeline> pipe;
  {
    std::lock_guard l(pipe_m_);
    pipe = pipe_;
  }
  if (!pipe) return fmt::format("0 frames due, {} sent", frames_sent_.load());
  return fmt::format("{} frames due, {} made, {} sent", pipe->frames_due(), pipe->frames_made(),
                     frames_sent_.load());
}

std::string MrdSession::status_line() const {
  if (phase_ != Phase::Admitted) return {};
  std::shared_ptr<SessionPipeline> pipe;
  {
    std::lock_guard l(pipe_m_);
    pipe = pipe_;
  }
  if (!pipe) return fmt::format("{} ({}): {}: waiting for its first acquisition", tag_, peer_, config_name_);
  return fmt::format("{} ({}): {}, matrix {}, {} coils: {}", tag_, peer_, pipe->settings().describe(),
                     header_.matrix, pipe->intake().state(0).header.coils, counts());
}

// How long the frames still due may take after the client's close: the session's slowest frame so far times
// the frames left, twice over, and two seconds for the last frame's trip; never more than drain_timeout_s.
// The slowest, not a percentile: on a GPU shared with other sessions one frame can take many times the
// median (another session starting or ending), and a frame cut by the deadline is a frame lost (the 95th
// percentile cut the last frame of 2 of 120 NLINV sessions in the soak under attack).
double MrdSession::drain_seconds() const {
  const std::uint64_t due = pipe_->frames_due(), done = pipe_->frames_made() + pipe_->frames_lost();
  const std::uint64_t left = due > done ? due - done : 0;
  double frame_ms = 1000.0;
  for (const auto& [stage, p] : pipe_->metrics().stage_summaries())
    if (stage == "frame_total" && p.count > 0) frame_ms = std::max(p.max, p.p99);
  return std::min(p_.drain_timeout_s, 2.0 + 2.0 * double(left) * frame_ms * 1e-3);
}

void MrdSession::finish_stream() {
  if (have_header_ && !pipe_) open_pipeline();  // a header and no acquisition: an empty stream, said so
  if (pipe_) {
    wire::Message m;
    m.env.type = std::uint16_t(wire::MsgType::Close);
    m.env.stream_id = stream_id_;
    m.env.sequence = sequence_;
    m.env.spoke_index = sequence_;  // a close carries the number of spokes sent
    pipe_->intake().close(m);
    // The frames still due: made (or dropped) by the deadline, each sent as it is made.
    const double limit_s = drain_seconds();
    const std::int64_t deadline = monotonic_ns() + std::int64_t(limit_s * 1e9);
    bool drained = pipe_->drained();
    {
      std::unique_lock l(frame_m_);
      while (!stop_ && !drained && monotonic_ns() < deadline) {
        frame_cv_.wait_for(l, std::chrono::milliseconds(20));
        drained = pipe_->drained();
      }
    }
    const std::uint64_t due = pipe_->frames_due(), made = pipe_->frames_made(), lost = pipe_->frames_lost();
    if (!drained && !stop_) {
      const std::uint64_t cut = due > made + lost ? due - made - lost : 0;
      log::warn("mrd: {}: {} frames still due after {:.1f} s; closing", tag_, cut, limit_s);
      queue_text(
          fmt::format("ERR radstream: {} of {} frames were not made within {:.1f} s of the close "
                      "(the measured frame time; --mrd-drain-timeout-s {} s at most); {} made",
                      cut, due, limit_s, p_.drain_timeout_s, made));
    }
    const std::uint64_t spokes = pipe_->intake().spokes_taken();
    if (due == 0)
      queue_text(
          fmt::format("WRN radstream: no image: {} spokes arrived, fewer than one window of {} "
                      "(frames.window)",
                      spokes, settings_.frames.window));
    else if (lost > 0)
      queue_text(fmt::format("WRN radstream: summary: {} spokes, {}; {} frames dropped or skipped", spokes,
                             counts(), lost));
    else
      queue_text(fmt::format("DBG radstream: summary: {} spokes, {}", spokes, counts()));
  }
  {
    std::lock_guard l(frame_m_);
    frames_wanted_ = false;  // no more frames for this session
  }
  const std::string final_counts = counts();
  drop_pipeline();  // its recording written out before the client hears the close
  if (phase_.exchange(Phase::Over) == Phase::Admitted) {
    server_.release_slot();  // free before the close is sent: a client may come back at once
    admitted_ = true;
  }
  std::vector<std::byte> c;
  mrd::append_close(c);
  {  // the close goes after every queued image, then nothing more
    std::lock_guard l(out_m_);
    out_.push_back({std::move(c), false, 0});
  }
  out_cv_.notify_all();
  if (have_header_)
    log::info("mrd: {} ({}) closed: {} acquisitions, {}", tag_, peer_, sequence_, final_counts);
  else
    log::debug("mrd: {} ({}) closed before any header", tag_, peer_);
}

void MrdSession::send_frame(std::shared_ptr<const FrameResult> f) {
  MrdImageContext c;
  // A volume goes as one 3D image, or as one image per partition (mrd.partition_images).
  const int images = p_.partition_images && f->depth > 1 ? f->depth : 1;
  std::uint16_t first_index = 0;
  {
    std::lock_guard l(frame_m_);
    if (!frames_wanted_) return;
    const std::size_t k = f->last_spoke % kRecent;
    if (recent_index_[k] == f->last_spoke) c.last_acquisition = recent_[k];
    std::copy(fov_, fov_ + 3, c.fov_mm);
    first_index = image_index_;
    image_index_ = std::uint16_t(image_index_ + images);
  }
  c.series = std::uint16_t(number_ & 0xffffu);
  c.method = to_string(settings_.recon.method);
  c.latency_ms = f->last_arrival_ns > 0 ? double(monotonic_ns() - f->last_arrival_ns) * 1e-6 : 0.0;
  {
    std::lock_guard l(out_m_);  // one per image of a frame kept for reuse: no allocation per image
    spare_kept_ = std::max<std::size_t>(4, std::size_t(images) + 2);
  }
  for (int z = 0; z < images; ++z) {
    c.index = std::uint16_t(first_index + z);
    c.partition = images > 1 ? z : -1;
    std::vector<std::byte> bytes;
    {
      std::lock_guard l(out_m_);
      if (!spare_.empty()) {
        bytes = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    encode_frame(*f, c, bytes);
    queue({std::move(bytes), true, f->last_arrival_ns, f->ready_ns});
  }
  ++frames_sent_;
  frame_cv_.notify_all();
  rt_.session_frame(
      std::move(f),  // the server's image files too, every frame when the session wants every one
      settings_.frames.skip_when_behind ? StreamRuntime::SinkDelivery::DropOldest
                                        : StreamRuntime::SinkDelivery::Wait);
}

void MrdSession::encode_frame(const FrameResult& f, MrdImageContext& c, std::vector<std::byte>& bytes) {
  std::lock_guard l(encode_m_);  // one encoder, and a stream of several slices has a worker each
  if (p_.pixels == MrdPixels::Int16 && series_scale_ == 0) {
    // One scale for the series, from its first frame: its peak at half the stored range, so that a
    // brighter frame later (contrast arriving) still fits; later frames keep it (said in ImageScale).
    float peak = 0.f;
    for (const cfloat& v : f.image) peak = std::max(peak, v.real());
    series_scale_ = peak > 0.f ? double((1 << kMrdStoredBits) - 1) / (2.0 * double(peak)) : 0.0;
  }
  c.scale = series_scale_;
  encoder_.encode(f, c, p_.pixels, bytes);
}

}  // namespace radstream
