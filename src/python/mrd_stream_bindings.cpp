// radstream.Stream(source) for MRD: the images of an MRD v1 message stream, as `radstream run --mrd-stdin`
// writes them to its standard output (or an MRD server to its client): a path (a file, or a FIFO being
// written), "-" (this process's standard input) or "fd:N" (an open descriptor, e.g. a subprocess's stdout).
// An iterator of (image, meta): the image in BART's order (x, y[, z][, channels], trailing singletons
// dropped) in its pixel type (float32, int16, complex64, ...), meta its image and series index, slice, type,
// field of view, position, and its attributes (name -> list of values). The texts the server sends (WRN, ERR,
// the session's summary) are kept in `texts`; the iteration ends at the stream's close (`closed` True), its
// end, `frames` images, or `idle_timeout` s without a byte; waits release the GIL and Ctrl-C interrupts them.
#include <fcntl.h>
#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "io/mrd2_images.hpp"
#include "io/mrd_protocol.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"

namespace radstream::python {
namespace {

// A stream that has been silent for longer than the caller allows (between messages: the iteration ends).
struct Idle {};

// The descriptor as the codec's byte source: poll()s of 100 ms, the signals looked at between them (with the
// GIL taken back for that moment), idle after idle_s.
class FdSource : public mrd::ByteSource {
 public:
  FdSource(int fd, double idle_s) : fd_(fd), idle_s_(idle_s) {}
  std::size_t read_some(std::byte* p, std::size_t n) override {
    const std::int64_t give_up = monotonic_ns() + std::int64_t(idle_s_ * 1e9);
    for (;;) {
      pollfd pf{fd_, POLLIN, 0};
      const int r = ::poll(&pf, 1, 100);
      if (r > 0) {
        const ssize_t k = ::read(fd_, p, n);
        if (k >= 0) return std::size_t(k);
        if (errno != EINTR && errno != EAGAIN) throw mrd::ProtocolError(mrd::Fault::Io, std::strerror(errno));
      } else if (r < 0 && errno != EINTR) {
        throw mrd::ProtocolError(mrd::Fault::Io, std::strerror(errno));
      }
      {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      }
      if (monotonic_ns() > give_up) {
        if (at_start_) throw Idle{};
        throw mrd::ProtocolError(mrd::Fault::Timeout,
                                 fmt::format("no byte for {} s inside a message", idle_s_));
      }
    }
  }
  void begin_message() override { at_start_ = true; }
  void started() { at_start_ = false; }

 private:
  int fd_;
  double idle_s_;
  bool at_start_ = true;
};

int open_source(const std::string& source) {
  int fd = -1;
  if (source == "-") {
    fd = ::dup(STDIN_FILENO);
  } else if (source.rfind("fd:", 0) == 0) {
    try {
      fd = ::dup(std::stoi(source.substr(3)));
    } catch (const std::logic_error&) {
      throw ConfigError(fmt::format("source '{}': fd:N takes a descriptor number", source));
    }
  } else {
    fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) throw IoError(fmt::format("source '{}': {}", source, std::strerror(errno)));
  return fd;
}

py::object meta_value(const yardl::Value& v) {
  if (v.contains("int64")) return py::int_(v["int64"].get<std::int64_t>());
  if (v.contains("float64")) return py::float_(v["float64"].get<double>());
  return py::str(v["string"].get<std::string>());
}

class PyMrdStream {
 public:
  PyMrdStream(const std::string& source, double idle_timeout, long frames)
      : source_(source), idle_s_(idle_timeout), left_(frames) {
    if (!(idle_timeout > 0)) throw ConfigError(fmt::format("idle_timeout {} must be > 0 s", idle_timeout));
    fd_ = open_source(source);
    lim_.keep_images = true;
    lim_.max_text_bytes = std::size_t(64) << 20;
  }
  ~PyMrdStream() {
    if (fd_ >= 0) ::close(fd_);
  }
  PyMrdStream(const PyMrdStream&) = delete;
  PyMrdStream& operator=(const PyMrdStream&) = delete;

  py::tuple next() {
    for (;;) {
      if (left_ == 0 || ended_) throw py::stop_iteration();
      std::optional<mrd::Message> m;
      try {
        py::gil_scoped_release free;
        FdSource src(fd_, idle_s_);
        m = mrd::read_message(src, lim_);
      } catch (const Idle&) {
        ended_ = true;
        throw py::stop_iteration();
      } catch (const mrd::ProtocolError& e) {
        ended_ = true;
        throw IoError(fmt::format("source '{}': {}", source_, e.what()));
      }
      if (!m || m->id == mrd::kClose) {
        closed_ = m.has_value();
        ended_ = true;
        throw py::stop_iteration();
      }
      if (m->id == mrd::kText) texts_.append(py::str(m->text));
      if (m->id != mrd::kImage) continue;
      if (left_ > 0) --left_;
      return py::make_tuple(image(m->image), meta(m->image));
    }
  }
  py::list texts() const { return texts_; }
  bool closed() const { return closed_; }

 private:
  static py::dtype dtype_of(std::uint16_t t) {
    switch (t) {
      case ISMRMRD::ISMRMRD_USHORT:
        return py::dtype("uint16");
      case ISMRMRD::ISMRMRD_SHORT:
        return py::dtype("int16");
      case ISMRMRD::ISMRMRD_UINT:
        return py::dtype("uint32");
      case ISMRMRD::ISMRMRD_INT:
        return py::dtype("int32");
      case ISMRMRD::ISMRMRD_FLOAT:
        return py::dtype("float32");
      case ISMRMRD::ISMRMRD_DOUBLE:
        return py::dtype("float64");
      case ISMRMRD::ISMRMRD_CXFLOAT:
        return py::dtype("complex64");
      case ISMRMRD::ISMRMRD_CXDOUBLE:
        return py::dtype("complex128");
      default:
        throw IoError(fmt::format("an MRD image of data type {}", t));
    }
  }
  static ISMRMRD::ISMRMRD_ImageHeader head_of(const mrd::Image& im) {
    ISMRMRD::ISMRMRD_ImageHeader h;
    std::memcpy(&h, im.head.data(), sizeof h);
    return h;
  }
  py::array image(const mrd::Image& im) const {
    const auto h = head_of(im);
    const py::dtype dt = dtype_of(h.data_type);
    std::vector<py::ssize_t> dims{h.matrix_size[0], h.matrix_size[1], h.matrix_size[2], h.channels};
    while (dims.size() > 1 && dims.back() == 1) dims.pop_back();  // as BART's readcfl
    std::vector<py::ssize_t> strides;
    py::ssize_t s = dt.itemsize(), total = 1;
    for (py::ssize_t d : dims) {
      strides.push_back(s);
      s *= d;
      total *= d;
    }
    if (std::size_t(total * dt.itemsize()) != im.pixels.size())
      throw IoError(fmt::format("source '{}': an image's pixels are {} bytes, its header makes {}", source_,
                                im.pixels.size(), total * dt.itemsize()));
    py::array a(dt, dims, strides);
    std::memcpy(a.mutable_data(), im.pixels.data(), im.pixels.size());
    return a;
  }
  static py::dict meta(const mrd::Image& im) {
    const auto h = head_of(im);
    py::dict m;
    m["image_index"] = h.image_index;
    m["image_series_index"] = h.image_series_index;
    m["slice"] = h.slice;
    m["image_type"] = h.image_type;
    m["data_type"] = h.data_type;
    m["matrix"] = py::make_tuple(h.matrix_size[0], h.matrix_size[1], h.matrix_size[2]);
    m["field_of_view"] = py::make_tuple(h.field_of_view[0], h.field_of_view[1], h.field_of_view[2]);
    m["position"] = py::make_tuple(h.position[0], h.position[1], h.position[2]);
    m["acquisition_time_stamp"] = h.acquisition_time_stamp;
    py::dict attrs;
    for (const auto& kv : mrd2::image_meta(im.attributes)) {
      py::list values;
      for (const auto& v : kv[1]) values.append(meta_value(v));
      attrs[py::str(kv[0].get<std::string>())] = values;
    }
    m["attributes"] = attrs;
    return m;
  }

  std::string source_;
  int fd_ = -1;
  double idle_s_;
  long left_;
  mrd::Limits lim_;
  py::list texts_;
  bool closed_ = false, ended_ = false;
};

}  // namespace

void bind_mrd_stream(py::module_& m) {
  py::class_<PyMrdStream>(m, "MrdStream",
                          "The images of an MRD v1 message stream (run --mrd-stdin's output): a path, '-' "
                          "(stdin) or 'fd:N'; iterate for (image, meta); `texts` holds the server's texts, "
                          "`closed` whether the stream closed.")
      .def(py::init<const std::string&, double, long>(), py::arg("source"), py::arg("idle_timeout") = 10.0,
           py::arg("frames") = -1)
      .def("__iter__", [](PyMrdStream& s) -> PyMrdStream& { return s; })
      .def("__next__", &PyMrdStream::next)
      .def_property_readonly("texts", &PyMrdStream::texts)
      .def_property_readonly("closed", &PyMrdStream::closed);
}

}  // namespace radstream::python
