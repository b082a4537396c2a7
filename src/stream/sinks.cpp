#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/log.hpp"
#include "io/frame_io.hpp"
#include "stream/run_config.hpp"
#include "stream/sink.hpp"
#include "wire/connection_guard.hpp"
#include "wire/curve.hpp"
#include "wire/endpoint.hpp"
#include "wire/wire.hpp"

namespace radstream {
namespace {

class ImagePublisher final : public Sink {
 public:
  ImagePublisher(zmq::context_t& ctx, const std::string& endpoint, Metrics& metrics,
                 const std::string& curve_key, const ConnectionLimits& limits)
      : ctx_(ctx), endpoint_(endpoint), curve_key_(curve_key), metrics_(metrics), limits_(limits) {
    open();
  }
  ~ImagePublisher() override { guard_.reset(); }
  std::string name() const override { return "publisher"; }
  void consume(const FrameResult& f) override {
    // A protocol session's images go back to its own client; the published stream is the runtime's own, one
    // stream per subscriber (its image header names no session).
    if (!f.session.empty()) return;
    take_subscriptions();
    const auto h = wire::encode_image_header({.number = f.number,
                                              .matrix = std::uint32_t(f.matrix),
                                              .window = std::uint32_t(f.window),
                                              .first_spoke = f.first_spoke,
                                              .last_spoke = f.last_spoke,
                                              .last_acquired_ns = f.last_acquired_ns,
                                              .ready_ns = f.ready_ns,
                                              .slice = std::uint16_t(f.slice),
                                              .depth = std::uint32_t(f.depth)});
    mag_.resize(f.image.size());  // reused frame after frame
    for (std::size_t i = 0; i < mag_.size(); ++i) mag_[i] = f.image[i].real();
    zmq::message_t m0(h.data(), h.size()), m1(mag_.data(), mag_.size() * sizeof(float));
    sock_.send(m0, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    sock_.send(m1, zmq::send_flags::dontwait);
    ++metrics_.published;
    const std::int64_t now = monotonic_ns();
    if (f.last_arrival_ns > 0) metrics_.published_latency.add(double(now - f.last_arrival_ns) * 1e-6);
    if (f.ready_ns > 0) metrics_.published_after_ready.add(double(now - f.ready_ns) * 1e-6);
  }

 private:
  // Subscriptions kept by the socket are bounded: an XPUB passes each new distinct topic up, and past
  // kMaxTopics of them the socket is made anew (every subscriber reconnects and subscribes again by itself).
  // A PUB socket kept every distinct topic a subscriber sent: 950,000 random ones grew the receiver by 2.1
  // GB.
  static constexpr int kMaxTopics = 4096;

  void open() {
    sock_ = zmq::socket_t(ctx_, zmq::socket_type::xpub);
    sock_.set(zmq::sockopt::linger, 0);
    sock_.set(zmq::sockopt::sndhwm, 16);
    sock_.set(zmq::sockopt::rcvhwm, 256);  // subscriptions taken in per call: the trie grows by at most this
    if (!curve_key_.empty()) make_curve_server(sock_, read_curve_key_file(curve_key_, true));
    guard_ = std::make_unique<ConnectionGuard>(ctx_, sock_, limits_, "sinks.publish", metrics_.publish_peers);
    if (is_ipv6_endpoint(endpoint_)) sock_.set(zmq::sockopt::ipv6, 1);
    for (int attempt = 0;; ++attempt) {
      try {
        sock_.bind(socket_endpoint(endpoint_));
        break;
      } catch (const zmq::error_t& e) {
        // Made anew: the old listener may need a moment to let the port go.
        if (topics_ == 0 || attempt >= 50 || e.num() != EADDRINUSE)
          throw ConfigError(fmt::format("sinks.publish: cannot bind {}: {}", endpoint_, e.what()));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    topics_ = 0;
  }

  void take_subscriptions() {
    zmq::message_t m;
    while (sock_.recv(m, zmq::recv_flags::dontwait)) {
      if (m.size() >= 1 && static_cast<const std::uint8_t*>(m.data())[0] == 1) ++topics_;
      ++metrics_.subscriptions;
      if (topics_ > kMaxTopics) {
        ++metrics_.publisher_resets;
        if (metrics_.publisher_resets.load() == 1)
          log::warn(
              "publisher: image subscribers sent more than {} distinct subscriptions; the socket is made "
              "anew (subscribers reconnect), as often as that happens (counted: publisher_resets)",
              kMaxTopics);
        guard_.reset();
        sock_.close();
        open();
        return;
      }
    }
  }

  zmq::context_t& ctx_;
  std::string endpoint_, curve_key_;
  Metrics& metrics_;
  ConnectionLimits limits_;
  zmq::socket_t sock_;
  std::unique_ptr<ConnectionGuard> guard_;  // declared after the socket: stopped before it closes
  int topics_ = 0;
  std::vector<float> mag_;
};

class ImageFiles final : public Sink {
 public:
  ImageFiles(const SinkParams& p, Metrics& metrics) : p_(p), metrics_(metrics), slices_(metrics.slice_count) {
    std::filesystem::create_directories(p.images);
  }
  std::string name() const override { return "image files"; }
  void consume(const FrameResult& f) override {
    if (f.number % std::uint64_t(p_.image_every) != 0) return;
    // A multi-slice stream: each slice's frames under their own names (frame numbers count per slice).
    // A protocol session's frames under its name (each session counts its own frames).
    std::string slice = slices_ > 1 ? fmt::format("slice{}_", f.slice) : std::string();
    if (!f.session.empty()) {
      std::string name = f.session;
      std::erase(name, ' ');
      slice = name + "_" + slice;
    }
    const std::string path =
        fmt::format("{}/{}frame_{:06d}.{}", p_.images, slice, f.number, kImageFormats.name(p_.image_format));
    if (f.depth > 1)
      write_volume(path, f.image, f.matrix, f.depth);
    else
      write_image(path, f.image, f.matrix);
    ++metrics_.images_written;
  }

 private:
  SinkParams p_;
  Metrics& metrics_;
  int slices_;
};

}  // namespace

std::vector<std::unique_ptr<Sink>> make_sinks(const SinkParams& p, zmq::context_t& ctx, Metrics& metrics,
                                              const std::string& curve_key, const ConnectionLimits& limits) {
  std::vector<std::unique_ptr<Sink>> sinks;
  if (!p.publish.empty())
    sinks.push_back(std::make_unique<ImagePublisher>(ctx, p.publish, metrics, curve_key, limits));
  if (!p.images.empty()) sinks.push_back(std::make_unique<ImageFiles>(p, metrics));
  return sinks;
}

}  // namespace radstream
