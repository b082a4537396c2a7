#include "stream/mrd_session.hpp"

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
#include "io/asymmetric_echo.hpp"
#include "io/mrd_file.hpp"
#include "stream/run_config.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/endpoint.hpp"
#include "wire/wire.hpp"

namespace radstream {

namespace {

bool flag(std::uint64_t flags, int bit) {
  return (flags >> (bit - 1)) & 1u;
}

// Acquisitions that are not imaging spokes of the stream: skipped and counted. ISMRMRD's flags are 1-based
// bit numbers; PARALLEL_CALIBRATION_AND_IMAGING (21) is imaging data.
bool non_imaging(std::uint64_t f) {
  using namespace ISMRMRD;
  if (flag(f, ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION) &&
      !flag(f, ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING))
    return true;
  for (int b : {ISMRMRD_ACQ_IS_NAVIGATION_DATA, ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD_ACQ_IS_HPFEEDBACK_DATA,
                ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE,
                ISMRMRD_ACQ_IS_PHASE_STABILIZATION})
    if (flag(f, b)) return true;
  return false;
}

std::uint32_t fresh_stream_id() {
  std::random_device rd;
  std::uint32_t id = 0;
  while (id == 0) id = rd();
  return id;
}

zmq::message_t bytes_message(const void* p, std::size_t n) {
  return zmq::message_t(p, n);
}

std::vector<std::byte> text_message(std::uint16_t id, const std::string& t) {
  std::vector<std::byte> b;
  mrd::append_text(b, id, t);
  return b;
}

}  // namespace

MrdSession::MrdSession(const MrdServerParams& p, StreamRuntime& rt, const std::string& ingest_endpoint, Fd fd,
                       std::string peer, std::uint32_t number)
    : p_(p),
      rt_(rt),
      push_(rt.zmq_context(), zmq::socket_type::push),
      fd_(std::move(fd)),
      peer_(std::move(peer)),
      number_(number),
      stream_id_(fresh_stream_id()),
      recent_(kRecent),
      recent_index_(kRecent, ~std::uint64_t(0)) {
  push_.set(zmq::sockopt::linger, 2000);
  push_.set(zmq::sockopt::sndhwm, 100000);
  if (is_ipv6_endpoint(ingest_endpoint)) push_.set(zmq::sockopt::ipv6, 1);
  push_.connect(socket_endpoint(ingest_endpoint));
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
  // The pipeline's warnings and errors go to the client as WRN/ERR texts, as a FIRE server's log does. Not
  // the MRD server's own lines ("mrd: ..."): this session's faults reach its client as its ERR text already,
  // and other sessions' are none of its business.
  forward_.emplace([this](bool error, std::string_view line) {
    if (line.substr(0, 4) == "mrd:" || line.substr(0, 9) == "security:") return;
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
    const long k = send_now(fd_.get(), o.bytes);
    if (k < 0) {
      dead_ = true;
      ++rt_.metrics().mrd.sessions_failed;
      log::warn("mrd: session {} ({}): the client went away; dropped", number_, peer_);
      ::shutdown(fd_.get(), SHUT_RDWR);  // the reader ends too
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
  if (spare_.size() < 4) spare_.push_back(std::move(o.bytes));
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
        if (!send_all(fd_.get(), std::span(o.bytes).subspan(o.sent), p_.send_timeout_s)) {
          dead_ = true;
          ++rt_.metrics().mrd.sessions_failed;
          log::warn("mrd: session {} ({}): the client took no data for {} s or went away; dropped", number_,
                    peer_, p_.send_timeout_s);
          ::shutdown(fd_.get(), SHUT_RDWR);  // the reader ends too
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
    SocketSource src(fd_.get(), p_.message_timeout_s, p_.idle_timeout_s, &stop_);
    serve(src);
  } catch (const mrd::ProtocolError& e) {
    fault = e.fault();
    log::warn("mrd: session {} ({}) ends: {} ({})", number_, peer_, log::printable_line(e.what(), 300),
              mrd::to_string(e.fault()));
    error = e.what();
  } catch (const std::exception& e) {
    log::error("mrd: session {} ({}) failed: {}", number_, peer_, log::printable_line(e.what(), 300));
    error = e.what();
  }
  if (header_sent_ &&
      !finished_) {  // a stream that ended without the client's close ends here for the ingest
    try {
      // (a short wait: the ingest takes a close in microseconds unless it follows another session's stream)
      close_for_ingest(monotonic_ns() + std::int64_t(std::min(p_.drain_timeout_s, 2.0) * 1e9));
    } catch (const std::exception& e) {
      log::warn("mrd: session {}: {}", number_, log::printable_line(e.what(), 300));
    }
  }
  {
    std::lock_guard l(frame_m_);
    finished_ = true;  // no more frames, and no longer counted against --mrd-max-sessions
  }
  // Counted once the stream is closed for the ingest and the session's place is free: a client that sees the
  // count may connect again at once.
  if (fault) ++rt_.metrics().mrd.faults[std::size_t(*fault)];
  if (!error.empty()) {
    ++rt_.metrics().mrd.sessions_failed;
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
  ::shutdown(fd_.get(), SHUT_RDWR);
  ended_ = true;
}

void MrdSession::close_for_ingest(std::int64_t deadline_ns) {
  const std::uint64_t closes0 = rt_.metrics().closes.load();
  wire::Envelope env;
  env.type = std::uint16_t(wire::MsgType::Close);
  env.stream_id = stream_id_;
  env.sequence = sequence_;
  env.spoke_index = sequence_;  // a close carries the number of spokes sent
  auto parts = wire::encode_bare(env);
  std::vector<zmq::message_t> msgs;
  for (auto& part : parts) msgs.push_back(bytes_message(part.data(), part.size()));
  send_to_ingest(msgs);
  while (rt_.metrics().closes.load() == closes0 && monotonic_ns() < deadline_ns && !stop_)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void MrdSession::send_to_ingest(std::vector<zmq::message_t>& parts) {
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!push_.send(parts[i], i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none))
      throw Error("the ingest did not take a message");
}

void MrdSession::serve(mrd::ByteSource& src) {
  mrd::Limits lim;  // one set of limits: the pipeline's
  lim.max_samples = p_.max_samples;
  lim.max_channels = p_.max_coils;
  auto& mm = rt_.metrics().mrd;
  for (;;) {
    auto msg = mrd::read_message(src, lim);
    if (!msg) {
      if (have_header_)
        throw mrd::ProtocolError(mrd::Fault::Truncated, "the client went away without a close");
      log::debug("mrd: session {} ({}) ended by the client before any header", number_, peer_);
      return;
    }
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
        on_header(msg->text);
        break;
      case mrd::kText:
        ++mm.texts;
        count_setting("text messages", ++texts_, kMaxTexts);
        if (have_header_ && sequence_ == 0 && !msg->text.empty() && msg->text.front() == '{')
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
        if (have_header_ && !header_sent_) forward_header();  // a header with no acquisition: an empty stream
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

void MrdSession::select_config(const std::string& raw, const std::string& how) {
  const std::string name = raw;
  if (name.empty() || name == "default") return;
  ReconParams r = rt_.recon();
  std::string choices;
  for (const auto& e : kReconMethods.items)
    if (!e.offline) choices += std::string(choices.empty() ? "" : ", ") + e.name;
  if (how == "config text") {
    try {
      RunConfig c = RunConfig::from_yaml(YAML::Load(name), "MRD config text");
      c.recon.keep_phase = p_.pixels == MrdPixels::Complex;
      rt_.set_recon(c.recon);
      rt_.set_window(c.frames.window);
      rt_.set_stride(c.frames.stride);
      log::info("mrd: session {} config text applied (method {})", number_, to_string(c.recon.method));
      return;
    } catch (const std::exception& e) {
      throw mrd::ProtocolError(
          mrd::Fault::BadField,
          fmt::format("the config text is not a radstream YAML configuration: {}", e.what()));
    }
  }
  r.keep_phase = p_.pixels == MrdPixels::Complex;
  bool method = true;
  try {
    r.method = parse_recon_method(name);
  } catch (const ConfigError&) {
    method = false;
  }
  if (method) {
    try {
      rt_.set_recon(r);
    } catch (const ConfigError& e) {  // e.g. complex images from a method without phase
      throw mrd::ProtocolError(mrd::Fault::BadField, fmt::format("config {}: {}", name, e.what()));
    }
    log::info("mrd: session {} reconstructs with {}", number_, name);
    queue_text(fmt::format("DBG radstream: reconstructing with {}", name));
    return;
  }
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(p_.config_dir, ec))
    if (f.path().extension() == ".yaml") files.push_back(f.path().stem().string());
  std::sort(files.begin(), files.end());
  const bool plain = name.find('/') == std::string::npos && name.find("..") == std::string::npos;
  const std::string stem =
      name.size() > 5 && name.ends_with(".yaml") ? name.substr(0, name.size() - 5) : name;
  if (plain && std::find(files.begin(), files.end(), stem) != files.end()) {
    const std::string path = (fs::path(p_.config_dir) / (stem + ".yaml")).string();
    try {
      RunConfig c = RunConfig::from_yaml(YAML::LoadFile(path), path);
      c.recon.keep_phase = p_.pixels == MrdPixels::Complex;
      rt_.set_recon(c.recon);
      rt_.set_window(c.frames.window);
      rt_.set_stride(c.frames.stride);
      log::info("mrd: session {} reconstructs with {} (method {})", number_, path, to_string(c.recon.method));
      queue_text(
          fmt::format("DBG radstream: reconstructing with {} (method {})", stem, to_string(c.recon.method)));
      return;
    } catch (const std::exception& e) {
      throw mrd::ProtocolError(mrd::Fault::BadField, fmt::format("config {}: {}", stem, e.what()));
    }
  }
  std::string yaml;
  for (const auto& f : files) yaml += std::string(yaml.empty() ? "" : ", ") + f;
  throw mrd::ProtocolError(
      mrd::Fault::BadField,
      fmt::format("unknown config '{}': the choices are the methods {} or a YAML file of the server's "
                  "config folder ({})",
                  name, choices, yaml.empty() ? "none found" : yaml));
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

void MrdSession::on_header(const std::string& xml) {
  StreamHeader h;
  try {
    h = stream_header_from_xml(xml, "the MRD XML header");
  } catch (const Error& e) {
    throw mrd::ProtocolError(mrd::Fault::BadField, e.what());
  }
  xml_ = xml;
  have_header_ = true;
  samples_full_ = h.samples;
  radstream_xml_ = xml.find("radstream_radial") != std::string::npos;
  ISMRMRD::IsmrmrdHeader x;
  ISMRMRD::deserialize(xml.c_str(), x);
  if (x.acquisitionSystemInformation && x.acquisitionSystemInformation->relativeReceiverNoiseBandwidth)
    receiver_bandwidth_ = *x.acquisitionSystemInformation->relativeReceiverNoiseBandwidth;
  {
    std::lock_guard l(frame_m_);
    const auto& f = x.encoding[0].reconSpace.fieldOfView_mm;
    fov_[0] = f.x > 0 ? f.x : float(h.fov_mm);
    fov_[1] = f.y > 0 ? f.y : float(h.fov_mm);
    fov_[2] = f.z > 0 ? f.z : 10.f;
  }
  log::info("mrd: session {} ({}): stream of {} samples x {} coils -> {}x{}", number_, peer_, h.samples,
            h.coils ? std::to_string(h.coils) : std::string("?"), h.matrix, h.matrix);
  if (h.coils > 0) forward_header();  // else: the coil count comes with the first acquisition
}

void MrdSession::forward_header() {
  wire::Envelope env;
  env.type = std::uint16_t(wire::MsgType::Header);
  env.stream_id = stream_id_;
  env.sequence = sequence_;
  auto parts = wire::encode_text(env, xml_);
  std::vector<zmq::message_t> msgs;
  for (auto& part : parts) msgs.push_back(bytes_message(part.data(), part.size()));
  send_to_ingest(msgs);
  header_sent_ = true;
}

void MrdSession::on_acquisition(const mrd::Acquisition& in) {
  auto& mm = rt_.metrics().mrd;
  const mrd::Acquisition* use = &in;
  ++mm.acquisitions;
  ISMRMRD::ISMRMRD_AcquisitionHeader head;
  std::memcpy(&head, in.head.data(), sizeof head);
  if (flag(in.flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
    ++mm.noise;
    if (noise_.noise_samples() + std::size_t(in.samples) > kMaxNoiseSamples) {
      // The covariance is well estimated long before (a scanner's noise scan is some 30,000 samples); the
      // rest would only keep the session (and its slot) busy.
      if (!noise_budget_told_)
        queue_text(
            fmt::format("WRN radstream: more than {} noise samples; the further noise acquisitions are "
                        "left out of the prewhitening",
                        kMaxNoiseSamples));
      noise_budget_told_ = true;
      return;
    }
    try {
      noise_.add_noise(in.data, in.channels, in.samples, head.sample_time_us);
    } catch (const InputError& e) {
      throw mrd::ProtocolError(mrd::Fault::BadField, e.what());
    }
    return;
  }
  if (non_imaging(in.flags)) {
    ++mm.non_imaging;
    return;
  }
  if (!have_header_)
    throw mrd::ProtocolError(mrd::Fault::BadField, "an acquisition came before the XML header (message 3)");
  {  // a partial echo: placed into the symmetric readout the header declares (io/asymmetric_echo.hpp)
    const Readout r{in.samples, head.center_sample};
    if (is_partial_echo(r, samples_full_)) {
      ISMRMRD::ISMRMRD_AcquisitionHeader ah = head;
      place_partial_echo(r, samples_full_, in.channels, in.traj_dims, in.traj, in.data, echo_.traj,
                         echo_.data);
      ah.number_of_samples = std::uint16_t(samples_full_);
      ah.center_sample = std::uint16_t(samples_full_ / 2);
      std::memcpy(echo_.head.data(), &ah, sizeof ah);
      echo_.samples = samples_full_;
      echo_.channels = in.channels;
      echo_.traj_dims = in.traj_dims;
      echo_.flags = in.flags;
      use = &echo_;
      if (++partial_echoes_ == 1)
        log::info("mrd: session {}: partial echoes ({} samples, k = 0 at {}) placed into readouts of {}",
                  number_, r.samples, r.center_sample, samples_full_);
    }
  }
  const mrd::Acquisition& a = *use;
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  std::memcpy(&h, a.head.data(), sizeof h);
  if (!header_sent_) {  // the header named no receiver channels: the first spoke's count
    ISMRMRD::IsmrmrdHeader x;
    ISMRMRD::deserialize(xml_.c_str(), x);
    if (!x.acquisitionSystemInformation)
      x.acquisitionSystemInformation = ISMRMRD::AcquisitionSystemInformation();
    x.acquisitionSystemInformation->receiverChannels = std::uint16_t(a.channels);
    std::ostringstream o;
    ISMRMRD::serialize(x, o);
    xml_ = o.str();
    forward_header();
  }
  // The spoke's index: radstream's own 64-bit one, else kspace_encode_step_1 unwrapped past 65535.
  if (radstream_xml_) {
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
  {
    std::lock_guard l(frame_m_);
    recent_[spoke_index_ % kRecent] = a.head;
    recent_index_[spoke_index_ % kRecent] = spoke_index_;
  }
  // Prewhitened by the noise scans that came before (the matrix made at the first imaging spoke).
  if (noise_.has_noise() && !noise_.ready() && !noise_failed_) {
    try {
      noise_.prepare(head.sample_time_us, receiver_bandwidth_);
      log::info("mrd: session {}: prewhitening: {}", number_, noise_.summary());
      queue_text("DBG radstream: prewhitening: " + noise_.summary());
    } catch (const InputError& e) {
      noise_failed_ = true;
      log::warn("mrd: session {}: {}", number_, log::printable_line(e.what(), 300));
      queue_text(std::string("WRN radstream: ") + e.what());
    }
  }
  if (noise_.ready()) {
    if (a.channels * a.samples != int(a.data.size()) ||
        std::size_t(a.channels) * a.channels != noise_.covariance().size())
      throw mrd::ProtocolError(mrd::Fault::BadField,
                               fmt::format("a spoke of {} coils after noise scans of {}", a.channels,
                                           int(std::sqrt(double(noise_.covariance().size())))));
    white_.assign(a.data.begin(), a.data.end());  // the session's buffer: no allocation per spoke
    noise_.apply(white_, a.samples);
  }
  const std::vector<cfloat>& data = noise_.ready() ? white_ : a.data;
  wire::Envelope env;
  env.type = std::uint16_t(wire::MsgType::Spoke);
  env.stream_id = stream_id_;
  env.sequence = ++sequence_;
  env.spoke_index = spoke_index_;
  env.acquired_ns = monotonic_ns();  // its arrival: a scanner's time stamps are not this machine's clock
  env.sent_ns = env.acquired_ns;
  env.angle = std::nan("");
  const auto envb = wire::encode_envelope(env);
  std::vector<zmq::message_t> msgs;
  msgs.push_back(bytes_message(envb.data(), envb.size()));
  msgs.push_back(bytes_message(a.head.data(), a.head.size()));
  msgs.push_back(bytes_message(a.traj.data(), a.traj.size() * sizeof(float)));
  msgs.push_back(bytes_message(data.data(), data.size() * sizeof(cfloat)));
  send_to_ingest(msgs);
}

void MrdSession::finish_stream() {
  if (header_sent_) {
    // The frames still due: once the ingest has taken the close, until the reconstruction and the sinks are
    // idle (bounded by drain_timeout_s).
    const std::int64_t deadline = monotonic_ns() + std::int64_t(p_.drain_timeout_s * 1e9);
    close_for_ingest(deadline);
    int idle = 0;
    while (monotonic_ns() < deadline && !stop_ && idle < 3) {
      idle = rt_.drained() && rt_.sinks_idle() ? idle + 1 : 0;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    if (monotonic_ns() >= deadline)
      log::warn("mrd: session {}: frames still due after {} s; closing", number_, p_.drain_timeout_s);
  }
  {
    std::lock_guard l(frame_m_);
    finished_ = true;  // no more frames for this session
  }
  std::vector<std::byte> c;
  mrd::append_close(c);
  {  // the close goes after every queued image, then nothing more
    std::lock_guard l(out_m_);
    out_.push_back({std::move(c), false, 0});
  }
  out_cv_.notify_all();
  if (have_header_)
    log::info("mrd: session {} ({}) closed: {} acquisitions forwarded", number_, peer_, sequence_);
  else
    log::debug("mrd: session {} ({}) closed before any header", number_, peer_);
}

void MrdSession::send_frame(const FrameResult& f) {
  MrdImageContext c;
  {
    std::lock_guard l(frame_m_);
    if (finished_) return;
    const std::size_t k = f.last_spoke % kRecent;
    if (recent_index_[k] == f.last_spoke) c.last_acquisition = recent_[k];
    std::copy(fov_, fov_ + 3, c.fov_mm);
    c.index = image_index_++;
  }
  c.series = std::uint16_t(number_ & 0xffffu);
  c.method = to_string(rt_.recon(f.slice).method);
  c.latency_ms = f.last_arrival_ns > 0 ? double(monotonic_ns() - f.last_arrival_ns) * 1e-6 : 0.0;
  std::vector<std::byte> bytes;
  {
    std::lock_guard l(out_m_);
    if (!spare_.empty()) {
      bytes = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  encoder_.encode(f, c, p_.pixels, bytes);
  queue({std::move(bytes), true, f.last_arrival_ns, f.ready_ns});
}

}  // namespace radstream
