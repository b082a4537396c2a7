// Who may connect: ZeroMQ's CURVE security (encrypted, authenticated connections) with a ZAP allow-list of
// client public keys. The receiver is the CURVE server (its key pair from `radstream keygen`); each sender or
// image subscriber is a client with a key pair of its own, admitted only when its public key is on the
// receiver's allow-list. Keys are Z85 text (40 characters). Key files:
//   NAME.key (mode 0600):  public = <Z85>\n secret = <Z85>\n   -- a key pair, kept by its owner
//   NAME.pub:              public = <Z85>\n                    -- handed to the other side
// An allow-list file holds one public key per line (a bare Z85 key or a "public = ..." line; lines starting
// with # are comments).
#pragma once
#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace radstream {

struct CurveKeys {
  std::string public_key, secret_key;  // Z85; secret empty for a .pub file
};

// A fresh key pair. Throws ConfigError when this libzmq lacks CURVE.
CurveKeys generate_curve_keys();
// Writes STEM.key (0600) and STEM.pub; refuses existing files unless overwrite. Throws IoError / ConfigError.
void write_curve_key_files(const CurveKeys& keys, const std::string& stem, bool overwrite);
// Reads a .key or .pub file; `need_secret`: a .key file is required. Throws ConfigError naming the file.
CurveKeys read_curve_key_file(const std::string& path, bool need_secret);
// Reads an allow-list of client public keys (at least one). Throws ConfigError naming the file and line.
std::set<std::string> read_curve_allow_list(const std::string& path);

// Socket roles (before bind/connect).
void make_curve_server(zmq::socket_t& s, const CurveKeys& server);
void make_curve_client(zmq::socket_t& s, const CurveKeys& client, const std::string& server_public_key);

// The ZAP handler of one ZeroMQ context: answers every CURVE handshake of that context's server sockets,
// admitting the keys on the allow-list. Runs its own thread; the first refusal of each key is logged.
class ZapHandler {
 public:
  ZapHandler(zmq::context_t& ctx, std::set<std::string> allowed, std::atomic<std::uint64_t>& denied);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

 private:
  void run() noexcept;
  zmq::socket_t sock_;
  std::set<std::string> allowed_;
  std::atomic<std::uint64_t>& denied_;
  std::atomic<bool> running_{true};
  std::thread thread_;
};

}  // namespace radstream
