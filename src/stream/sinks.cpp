#include <fmt/format.h>

#include <filesystem>

#include "io/frame_io.hpp"
#include "stream/run_config.hpp"
#include "stream/sink.hpp"
#include "wire/curve.hpp"
#include "wire/wire.hpp"

namespace radstream {
namespace {

class ImagePublisher final : public Sink {
 public:
  ImagePublisher(zmq::context_t& ctx, const std::string& endpoint, Metrics& metrics,
                 const std::string& curve_key)
      : sock_(ctx, zmq::socket_type::pub), metrics_(metrics) {
    sock_.set(zmq::sockopt::linger, 0);
    sock_.set(zmq::sockopt::sndhwm, 16);
    if (!curve_key.empty()) make_curve_server(sock_, read_curve_key_file(curve_key, true));
    try {
      sock_.bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw ConfigError(fmt::format("sinks.publish: cannot bind {}: {}", endpoint, e.what()));
    }
  }
  std::string name() const override { return "publisher"; }
  void consume(const FrameResult& f) override {
    const auto h = wire::encode_image_header({.number = f.number,
                                              .matrix = std::uint32_t(f.matrix),
                                              .window = std::uint32_t(f.window),
                                              .first_spoke = f.first_spoke,
                                              .last_spoke = f.last_spoke,
                                              .last_acquired_ns = f.last_acquired_ns,
                                              .ready_ns = f.ready_ns,
                                              .slice = std::uint16_t(f.slice)});
    mag_.resize(f.image.size());  // reused frame after frame
    for (std::size_t i = 0; i < mag_.size(); ++i) mag_[i] = f.image[i].real();
    zmq::message_t m0(h.data(), h.size()), m1(mag_.data(), mag_.size() * sizeof(float));
    sock_.send(m0, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    sock_.send(m1, zmq::send_flags::dontwait);
    ++metrics_.published;
  }

 private:
  zmq::socket_t sock_;
  Metrics& metrics_;
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
    const std::string slice = slices_ > 1 ? fmt::format("slice{}_", f.slice) : std::string();
    write_image(
        fmt::format("{}/{}frame_{:06d}.{}", p_.images, slice, f.number, kImageFormats.name(p_.image_format)),
        f.image, f.matrix);
    ++metrics_.images_written;
  }

 private:
  SinkParams p_;
  Metrics& metrics_;
  int slices_;
};

}  // namespace

std::vector<std::unique_ptr<Sink>> make_sinks(const SinkParams& p, zmq::context_t& ctx, Metrics& metrics,
                                              const std::string& curve_key) {
  std::vector<std::unique_ptr<Sink>> sinks;
  if (!p.publish.empty())
    sinks.push_back(std::make_unique<ImagePublisher>(ctx, p.publish, metrics, curve_key));
  if (!p.images.empty()) sinks.push_back(std::make_unique<ImageFiles>(p, metrics));
  return sinks;
}

}  // namespace radstream
