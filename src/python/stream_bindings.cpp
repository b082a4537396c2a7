// radstream.Stream(endpoint): the frames of a running pipeline, as its image publisher sends them
// (`radstream run --publish tcp://...`, docs/protocol.md "Images out"): an iterator of (image, meta), the
// image the float32 (N, N) magnitudes in BART's order (x first, as radstream.recon returns), meta the frame's
// number, slice, window, first and last spoke, the newest spoke's acquisition time and when the image was
// ready (ns). It ends after `idle_timeout` seconds without a frame (a stream that stopped) or after `frames`
// frames; the wait is in slices of 100 ms with the GIL released, so Ctrl-C interrupts it.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <zmq.hpp>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"
#include "wire/wire.hpp"

namespace radstream::python {
namespace {

class PyStream {
 public:
  PyStream(const std::string& endpoint, double idle_timeout, long frames)
      : sock_(ctx_, zmq::socket_type::sub), idle_s_(idle_timeout), left_(frames) {
    if (!(idle_timeout > 0)) throw ConfigError(fmt::format("idle_timeout {} must be > 0 s", idle_timeout));
    try {
      sock_.set(zmq::sockopt::subscribe, "");
      sock_.set(zmq::sockopt::rcvtimeo, 100);
      sock_.set(zmq::sockopt::linger, 0);
      sock_.connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw ConfigError(fmt::format("endpoint '{}': {}", endpoint, e.what()));
    }
  }

  py::tuple next() {
    if (left_ == 0) throw py::stop_iteration();
    const std::int64_t give_up = monotonic_ns() + std::int64_t(idle_s_ * 1e9);
    for (;;) {
      zmq::message_t head, body;
      bool got = false;
      {
        py::gil_scoped_release free;
        got = receive(head, body);
      }
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (got) {
        const auto h =
            wire::decode_image_header(std::span(static_cast<const std::byte*>(head.data()), head.size()));
        const std::size_t n = h ? std::size_t(h->matrix) : 0, d = h ? std::size_t(h->depth) : 0;
        if (h && body.size() == n * n * d * sizeof(float)) {
          if (left_ > 0) --left_;
          return py::make_tuple(image(body, n, d), meta(*h));
        }
        ++skipped_;  // not an image message of this protocol version: passed over
        continue;
      }
      if (monotonic_ns() > give_up) throw py::stop_iteration();
    }
  }
  long skipped() const { return skipped_; }

 private:
  bool receive(zmq::message_t& head, zmq::message_t& body) {
    if (!sock_.recv(head)) return false;
    if (!head.more()) return true;  // (a one-part message: judged by its header)
    while (true) {
      if (!sock_.recv(body)) return false;
      if (!body.more()) return true;
    }
  }
  static py::array image(const zmq::message_t& body, std::size_t n, std::size_t depth) {
    // Row-major [y][x] is x fastest: BART's (x, y) in Fortran order; a volume [z][y][x] is BART's (x, y, z).
    const auto f = py::ssize_t(sizeof(float));
    py::array_t<float> a =
        depth > 1 ? py::array_t<float>({py::ssize_t(n), py::ssize_t(n), py::ssize_t(depth)},
                                       {f, py::ssize_t(n) * f, py::ssize_t(n * n) * f})
                  : py::array_t<float>({py::ssize_t(n), py::ssize_t(n)}, {f, py::ssize_t(n) * f});
    std::memcpy(a.mutable_data(), body.data(), body.size());
    return a;
  }
  static py::dict meta(const wire::ImageHeader& h) {
    py::dict m;
    m["number"] = h.number;
    m["slice"] = h.slice;
    m["matrix"] = h.matrix;
    m["window"] = h.window;
    m["first_spoke"] = h.first_spoke;
    m["last_spoke"] = h.last_spoke;
    m["last_acquired_ns"] = h.last_acquired_ns;
    m["ready_ns"] = h.ready_ns;
    m["depth"] = h.depth;
    return m;
  }

  zmq::context_t ctx_{1};
  zmq::socket_t sock_;
  double idle_s_;
  long left_;
  long skipped_ = 0;
};

}  // namespace

void bind_stream(py::module_& m) {
  py::class_<PyStream>(
      m, "Stream",
      "The frames of a running pipeline's image publisher (radstream run --publish E): iterate "
      "for (image, meta); ends after idle_timeout s without a frame, or after `frames`.")
      .def(py::init<const std::string&, double, long>(), py::arg("endpoint"), py::arg("idle_timeout") = 10.0,
           py::arg("frames") = -1)
      .def("__iter__", [](PyStream& s) -> PyStream& { return s; })
      .def("__next__", &PyStream::next)
      .def_property_readonly("skipped", &PyStream::skipped);
}

}  // namespace radstream::python
