#include "batch/batch_items.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/param_reader.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "recon/backend.hpp"
#include "recon/recon_chain.hpp"

namespace radstream::app {
namespace fs = std::filesystem;
namespace {

// key=value; for every declared key (the canonical, hashed form of a set).
class Canonical {
 public:
  explicit Canonical(std::string section) : section_(std::move(section)) {}
  template <class T>
  void field(const char* key, const T& value, T, T, const char*) {
    out_ << section_ << '.' << key << '=' << fmt::format("{}", value) << ';';
  }
  void field(const char* key, const bool& value, const char*) {
    out_ << section_ << '.' << key << '=' << value << ';';
  }
  void field(const char* key, const std::string& value, const char*) {
    out_ << section_ << '.' << key << "='" << value << "';";
  }
  template <class E, class Table>
  void choice(const char* key, const E& value, const Table& table, const char*) {
    out_ << section_ << '.' << key << '=' << table.name(value) << ';';
  }
  std::string str() const { return out_.str(); }

 private:
  std::string section_;
  std::ostringstream out_;
};

struct Fnv {
  std::uint64_t h = 1469598103934665603ull;
  void add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
};

std::string hex16(std::uint64_t v) {
  return fmt::format("{:016x}", v);
}

// A recording or a file list must be a regular file: /dev/zero, a FIFO or a link to one would be read
// without end (hashing a recording reads it whole).
void expect_regular_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
    throw IoError(std::string("batch: ") + what + " " + path +
                  " is not a regular file (a device, FIFO or folder)");
}

Fnv hash_file(const std::string& path) {
  expect_regular_file(path, "recording");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("batch: cannot read " + path);
  Fnv h;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    h.add(buf.data(), std::size_t(f.gcount()));
  }
  if (f.bad()) throw IoError("batch: error reading " + path);
  return h;
}

std::string json_path(const std::string& dir, const BatchItem& item) {
  return (fs::path(dir) / (item.id + ".json")).string();
}

}  // namespace

std::vector<SweepSet> read_param_sweep(const std::string& path) {
  std::vector<SweepSet> sets;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap()) throw ConfigError("not a YAML map (expected 'sets:')");
    for (const auto& kv : root)
      if (kv.first.as<std::string>() != "sets")
        throw ConfigError("unknown key '" + kv.first.as<std::string>() + "' (expected sets)");
    const YAML::Node list = root["sets"];
    if (!list || !list.IsSequence() || list.size() == 0)
      throw ConfigError("'sets:' must be a non-empty list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node n = list[i];
      SweepSet s;
      s.name = n["name"] ? n["name"].as<std::string>() : "set" + std::to_string(i + 1);
      try {
        if (!n.IsMap()) throw ConfigError("not a map");
        for (const auto& kv : n) {
          const auto key = kv.first.as<std::string>();
          if (key != "name" && key != "frames" && key != "recon")
            throw ConfigError("unknown key '" + key + "' (expected name, frames, recon)");
        }
        ParamReader r(n["frames"], "frames");
        s.frames.visit(r);
        r.finish();
        s.frames.validate();
        if (s.frames.framing != Framing::Sliding)
          throw ConfigError("frames.framing: batch replays sliding windows");
        s.recon = ReconParams::from_config(n["recon"]);
        // FFTW's measure mode picks its algorithms by timing them, so two runs may round differently; a
        // batch's outputs are reproducible (byte-identical on any rank count) unless a set asks for it.
        if (!n["recon"] || !n["recon"]["fftw_planner"]) s.recon.fft.planner = FftPlanner::Estimate;
        s.recon.validate();
      } catch (const ConfigError& e) {
        throw ConfigError("set '" + s.name + "': " + e.what());
      }
      Canonical fc("frames"), rc("recon");
      s.frames.visit(fc);
      s.recon.visit(rc);
      s.canonical = fc.str() + rc.str();
      for (const auto& other : sets)
        if (other.name == s.name) throw ConfigError("two sets named '" + s.name + "'");
      sets.push_back(std::move(s));
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": " + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
  return sets;
}

std::vector<std::string> expand_file_list(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const auto& a : args) {
    const fs::path p(a);
    if (p.extension() == ".txt" || p.extension() == ".list") {
      expect_regular_file(a, "file list");
      std::ifstream f(a);
      if (!f) throw IoError("batch: cannot read the file list " + a);
      std::string line;
      while (std::getline(f, line)) {
        const auto b = line.find_first_not_of(" \t"), e = line.find_last_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        fs::path q(line.substr(b, e - b + 1));
        files.push_back((q.is_absolute() ? q : p.parent_path() / q).string());
      }
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) throw ConfigError("batch: --files names no recording");
  return files;
}

std::vector<BatchItem> plan_items(const std::vector<std::string>& files, const std::vector<SweepSet>& sets) {
  std::vector<BatchItem> items;
  std::map<std::string, std::string> seen;  // id -> the item that has it
  for (const auto& file : files) {
    const Fnv base = hash_file(file);
    for (std::size_t s = 0; s < sets.size(); ++s) {
      Fnv h = base;
      h.add(sets[s].canonical.data(), sets[s].canonical.size());
      const std::string id = hex16(h.h);
      const std::string what = file + " x " + sets[s].name;
      if (const auto it = seen.find(id); it != seen.end()) {  // same bytes, same parameters: one output
        log::warn("batch: {} is the same item as {} (same content and parameters): made once", what,
                  it->second);
        continue;
      }
      seen.emplace(id, what);
      items.push_back({items.size(), file, s, id});
    }
  }
  return items;
}

bool item_done(const std::string& out_dir, const BatchItem& item) {
  return fs::exists(json_path(out_dir, item));
}

void maybe_die_mid_item(int rank, int items_done_by_rank) {
  const char* spec = std::getenv("RADSTREAM_BATCH_DIE");
  if (!spec) return;
  int r = -1, n = -1;
  if (std::sscanf(spec, "%d:%d", &r, &n) != 2) return;
  if (r == rank && n == items_done_by_rank) {
    log::warn("batch: rank {} killing itself mid-item (RADSTREAM_BATCH_DIE={})", rank, spec);
    ::kill(::getpid(), SIGKILL);
  }
}

ItemResult run_item(const BatchItem& item, const SweepSet& set_in, const std::string& out_dir, int rank,
                    int done_before, int threads) {
  SweepSet set = set_in;
  if (threads > 0 && (set.recon.threads == 0 || set.recon.threads > threads)) set.recon.threads = threads;
  ItemResult res;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string tmp = (fs::path(out_dir) / fmt::format(".{}.rank{}.tmp", item.id, rank)).string();
  try {
    check_mrd_in_child(item.file);  // a file that crashes HDF5 fails this item, not the rank
    const MrdRecording rec = read_mrd(item.file);
    const int W = set.frames.window, S = set.frames.stride;
    if (long(rec.spokes.size()) < W)
      throw InputError(
          fmt::format("{} has {} spokes, fewer than the window {}", item.file, rec.spokes.size(), W));
    const BackendDecision b = resolve_backend(set.recon.backend);
    const Registry registry = default_registry();
    ReconChain chain(set.recon, b.backend, registry);
    std::vector<cfloat> stack;
    int N = 0;
    for (std::size_t end = std::size_t(W); end <= rec.spokes.size(); end += std::size_t(S)) {
      const Frame frame = frame_from_spokes(
          rec.header, std::span<const Spoke>(rec.spokes.data() + (end - std::size_t(W)), std::size_t(W)));
      if (res.frames == 0) {
        chain.configure(frame.geometry);
        N = frame.geometry.matrix;
      }
      const View<const cfloat> image = chain.reconstruct(frame);
      const std::span<const cfloat> px = image.span();
      stack.insert(stack.end(), px.begin(), px.end());
      ++res.frames;
    }
    write_cfl(tmp, {long(N), long(N), long(res.frames)}, stack);
    maybe_die_mid_item(rank, done_before);
    fs::rename(tmp + ".cfl", (fs::path(out_dir) / (item.id + ".cfl")).string());
    fs::rename(tmp + ".hdr", (fs::path(out_dir) / (item.id + ".hdr")).string());
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::ordered_json j;
    j["id"] = item.id;
    j["file"] = item.file;
    j["set"] = set.name;
    j["parameters"] = set.canonical;
    j["matrix"] = N;
    j["frames"] = res.frames;
    j["backend"] = to_string(b.backend);
    j["rank"] = rank;
    j["seconds"] = res.seconds;
    const std::string jtmp = tmp + ".json";
    {
      std::ofstream o(jtmp);
      o << j.dump(2) << "\n";
      if (!o) throw IoError("cannot write " + jtmp);
    }
    fs::rename(jtmp, json_path(out_dir, item));
    res.ok = true;
  } catch (const std::exception& e) {
    res.error = e.what();
    std::error_code ec;
    for (const char* ext : {".cfl", ".hdr", ".json"}) fs::remove(tmp + ext, ec);
  }
  return res;
}

}  // namespace radstream::app
