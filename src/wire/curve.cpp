#include "wire/curve.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {
namespace {

bool is_z85_key(const std::string& k) {
  static const std::string alphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  return k.size() == 40 && k.find_first_not_of(alphabet) == std::string::npos;
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// "name = value" -> value when the name matches, else "".
std::string value_of(const std::string& line, const std::string& name) {
  const auto eq = line.find('=');
  if (eq == std::string::npos || trim(line.substr(0, eq)) != name) return "";
  return trim(line.substr(eq + 1));
}

void write_file(const std::string& path, const std::string& text, mode_t mode, bool overwrite) {
  if (!overwrite && std::filesystem::exists(path))
    throw IoError("keygen: " + path + " exists; choose another name or pass --overwrite");
  {
    std::ofstream f(path, std::ios::trunc);
    if (!f) throw IoError("keygen: cannot write " + path);
    f << text;
    if (!f) throw IoError("keygen: cannot write " + path);
  }
  if (::chmod(path.c_str(), mode) != 0) throw IoError("keygen: cannot set the permissions of " + path);
}

}  // namespace

CurveKeys generate_curve_keys() {
  if (!zmq_has("curve")) throw ConfigError("this libzmq was built without CURVE security");
  std::array<char, 41> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    throw ConfigError(std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno()));
  return {pub.data(), sec.data()};
}

void write_curve_key_files(const CurveKeys& keys, const std::string& stem, bool overwrite) {
  const std::string key = stem + ".key", pub = stem + ".pub";
  if (!overwrite && (std::filesystem::exists(key) || std::filesystem::exists(pub)))
    throw IoError("keygen: " + key + " or " + pub + " exists; choose another name or pass --overwrite");
  const auto dir = std::filesystem::path(stem).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  write_file(key,
             "# radstream CURVE key pair: keep it secret\npublic = " + keys.public_key +
                 "\nsecret = " + keys.secret_key + "\n",
             0600, overwrite);
  write_file(pub, "# radstream CURVE public key\npublic = " + keys.public_key + "\n", 0644, overwrite);
}

CurveKeys read_curve_key_file(const std::string& path, bool need_secret) {
  std::ifstream f(path);
  if (!f) throw ConfigError("CURVE key file " + path + " cannot be read");
  CurveKeys k;
  std::string line;
  while (std::getline(f, line)) {
    if (const auto v = value_of(line, "public"); !v.empty()) k.public_key = v;
    if (const auto v = value_of(line, "secret"); !v.empty()) k.secret_key = v;
  }
  if (!is_z85_key(k.public_key))
    throw ConfigError("CURVE key file " + path + " has no valid 'public = <40 Z85>' line");
  if (need_secret && !is_z85_key(k.secret_key))
    throw ConfigError("CURVE key file " + path +
                      " has no valid 'secret = ...' line (give the .key file, not the .pub)");
  if (need_secret) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077))
      log::warn("CURVE key file {} can be read by other users (chmod 600 it)", path);
  }
  return k;
}

std::set<std::string> read_curve_allow_list(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw ConfigError("CURVE allow-list " + path + " cannot be read");
  std::set<std::string> keys;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;  // (only whole-line comments: '#' is a Z85 character)
    if (const auto v = value_of(t, "public"); !v.empty()) t = v;
    if (!is_z85_key(t))
      throw ConfigError(fmt::format("CURVE allow-list {} line {}: '{}' is not a 40-character Z85 public key",
                                    path, n, t.substr(0, 60)));
    keys.insert(t);
  }
  if (keys.empty()) throw ConfigError("CURVE allow-list " + path + " lists no public key");
  return keys;
}

void make_curve_server(zmq::socket_t& s, const CurveKeys& server) {
  s.set(zmq::sockopt::curve_server, 1);
  s.set(zmq::sockopt::curve_secretkey, server.secret_key);
  s.set(zmq::sockopt::zap_domain, "radstream");
}

void make_curve_client(zmq::socket_t& s, const CurveKeys& client, const std::string& server_public_key) {
  s.set(zmq::sockopt::curve_serverkey, server_public_key);
  s.set(zmq::sockopt::curve_publickey, client.public_key);
  s.set(zmq::sockopt::curve_secretkey, client.secret_key);
}

ZapHandler::ZapHandler(zmq::context_t& ctx, std::set<std::string> allowed, std::atomic<std::uint64_t>& denied)
    : sock_(ctx, zmq::socket_type::rep), allowed_(std::move(allowed)), denied_(denied) {
  sock_.set(zmq::sockopt::linger, 0);
  sock_.set(zmq::sockopt::rcvtimeo, 100);
  sock_.bind("inproc://zeromq.zap.01");  // the address ZeroMQ asks for every handshake of this context
  thread_ = std::thread([this] { run(); });
}

ZapHandler::~ZapHandler() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::run() noexcept {
  std::set<std::string> logged;
  while (running_) {
    try {
      std::vector<zmq::message_t> req;
      zmq::message_t m;
      if (!sock_.recv(m, zmq::recv_flags::none)) continue;
      req.push_back(std::move(m));
      while (sock_.get(zmq::sockopt::rcvmore)) {
        zmq::message_t more;
        if (!sock_.recv(more, zmq::recv_flags::none)) break;
        req.push_back(std::move(more));
      }
      // RFC 27: version, request id, domain, address, routing id, mechanism, credentials...
      bool ok = false;
      std::string who = "?", address = req.size() > 3 ? req[3].to_string() : "?";
      if (req.size() >= 7 && req[0].to_string() == "1.0" && req[5].to_string() == "CURVE" &&
          req[6].size() == 32) {
        std::array<char, 41> z85{};
        zmq_z85_encode(z85.data(), static_cast<const std::uint8_t*>(req[6].data()), 32);
        who = z85.data();
        ok = allowed_.count(who) > 0;
      }
      if (!ok) {
        ++denied_;
        if (logged.size() < 100 && logged.insert(who).second)
          log::warn("security: refused a connection from {} with key {} (not on the CURVE allow-list)",
                    address, who);
      }
      const std::string id = req.size() > 1 ? req[1].to_string() : "";
      const std::array<std::string, 6> reply{
          "1.0", id, ok ? "200" : "400", ok ? "OK" : "key not allowed", ok ? who : "", ""};
      for (std::size_t i = 0; i < reply.size(); ++i)
        sock_.send(zmq::buffer(reply[i]),
                   i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    } catch (const std::exception& e) {
      log::error("security: the ZAP handler hit an error: {}", e.what());
    }
  }
}

}  // namespace radstream
