#include "io/yardl_schema.hpp"

#include <fmt/format.h>

#include <complex>
#include <cstring>

#include "core/error.hpp"

namespace radstream::yardl {

using nlohmann::json;

namespace {

constexpr int kMaxDepth = 64;  // the MRD model nests 6 deep; a schema that recurses is refused, not followed

// The fixed size of a primitive written as raw bytes (0: a varint, a string or not a primitive).
std::size_t raw_size(const std::string& p) {
  if (p == "bool") return 1;
  if (p == "float32" || p == "float") return 4;
  if (p == "float64" || p == "double" || p == "complexfloat32" || p == "complexfloat") return 8;
  if (p == "complexfloat64" || p == "complexdouble") return 16;
  return 0;
}

bool is_signed_int(const std::string& p) {
  return p == "int8" || p == "int16" || p == "int32" || p == "int64" || p == "int" || p == "long" ||
         p == "date" || p == "time" || p == "datetime";
}

bool is_unsigned_int(const std::string& p) {
  return p == "uint8" || p == "uint16" || p == "uint32" || p == "uint64" || p == "size" || p == "uint" ||
         p == "ulong";
}

bool is_primitive(const std::string& p) {
  return raw_size(p) > 0 || is_signed_int(p) || is_unsigned_int(p) || p == "string";
}

// Replaces a generic definition's type parameters by the reference's arguments (names and labels left).
json substitute(const json& t, const std::map<std::string, json>& args) {
  if (t.is_string()) {
    const auto it = args.find(t.get<std::string>());
    return it == args.end() ? t : it->second;
  }
  if (t.is_array()) {
    json out = json::array();
    for (const json& e : t) out.push_back(substitute(e, args));
    return out;
  }
  if (!t.is_object()) return t;
  json out = json::object();
  for (const auto& [k, v] : t.items())
    out[k] = (k == "name" || k == "tag" || k == "label" || k == "symbol" || k == "typeParameters")
                 ? v
                 : substitute(v, args);
  return out;
}

// A union case: its tag (empty for an optional's value) and its type; null for the null case.
struct Case {
  bool null = false;
  std::string tag;
  json type;
};

Case union_case(const json& u, std::size_t i) {
  const json& c = u[i];
  if (c.is_null()) return {true, {}, {}};
  if (c.is_object() && c.contains("type") && (c.contains("tag") || c.contains("label")))
    return {false, c.contains("tag") ? c["tag"].get<std::string>() : c["label"].get<std::string>(),
            c["type"]};
  return {false, {}, c};  // an optional's simplified case
}

bool is_optional(const json& u) {
  return u.size() == 2 && u[0].is_null() && union_case(u, 1).tag.empty();
}

std::uint64_t product(const std::vector<std::uint64_t>& dims, const Input& in) {
  std::uint64_t n = 1;
  for (std::uint64_t d : dims) {
    if (d != 0 && n > UINT64_MAX / d) in.fail("array dimensions whose product overflows");
    n *= d;
  }
  return n;
}

}  // namespace

Schema::Schema(const std::string& text, const std::string& source) {
  json s;
  try {
    s = json::parse(text);
  } catch (const json::exception& e) {
    throw IoError(fmt::format("{}: the protocol schema is not JSON: {}", source, e.what()));
  }
  if (!s.is_object() || !s.contains("protocol") || !s["protocol"].contains("sequence"))
    throw IoError(fmt::format("{}: the protocol schema has no protocol sequence", source));
  protocol_ = s["protocol"];
  if (s.contains("types"))
    for (const json& t : s["types"])
      if (t.is_object() && t.contains("name")) types_[t["name"].get<std::string>()] = t;
}

const json& Schema::step_type(const std::string& step) const {
  for (const json& st : protocol_["sequence"])
    if (st.value("name", "") == step) {
      const json& t = st["type"];
      return t.is_object() && t.contains("stream") ? t["stream"]["items"] : t;
    }
  throw IoError(fmt::format("the protocol {} has no step '{}'", protocol_.value("name", "?"), step));
}

json Schema::resolve(const json& type) const {
  json t = type;
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    std::string name;
    std::map<std::string, json> args;
    if (t.is_string()) {
      name = t.get<std::string>();
      if (is_primitive(name)) return t;
    } else if (t.is_object() && t.contains("name") && t.contains("typeArguments")) {
      name = t["name"].get<std::string>();
    } else {
      return t;  // a union, vector, array, map or stream
    }
    const auto dot = name.rfind('.');
    const auto it = types_.find(dot == std::string::npos ? name : name.substr(dot + 1));
    if (it == types_.end())
      throw InputError(fmt::format("the schema names the type '{}' but defines none", name));
    json def = it->second;
    if (def.contains("typeParameters")) {
      const json& params = def["typeParameters"];
      if (!t.is_object() || t["typeArguments"].size() != params.size())
        throw InputError(fmt::format("the generic type '{}' is used without its type arguments", name));
      for (std::size_t i = 0; i < params.size(); ++i)
        args[params[i].get<std::string>()] = t["typeArguments"][i];
      def = substitute(def, args);
    }
    if (def.contains("fields")) return json{{"record", def}};
    if (def.contains("values")) return json{{"enum", def}};
    if (!def.contains("type"))
      throw InputError(fmt::format("the schema's type '{}' is neither record, enum nor alias", name));
    t = def["type"];
  }
  throw InputError("the schema's type aliases nest too deep (a cycle?)");
}

Value Schema::read(const json& type, Input& in) const {
  Value v;
  walk(type, in, &v, 0);
  return v;
}

void Schema::skip(const json& type, Input& in) const {
  walk(type, in, nullptr, 0);
}

namespace {

void read_primitive(const std::string& p, Input& in, Value* out) {
  if (const std::size_t raw = raw_size(p)) {
    if (!out) return in.skip(raw);
    if (p == "bool") {
      unsigned char b = 0;
      in.read(&b, 1);
      *out = b != 0;
    } else if (raw == 4) {
      *out = in.f32();
    } else if (p == "float64" || p == "double") {
      *out = in.f64();
    } else if (raw == 8) {
      const float re = in.f32(), im = in.f32();
      *out = Value::array({re, im});
    } else {
      const double re = in.f64(), im = in.f64();
      *out = Value::array({re, im});
    }
  } else if (p == "string") {
    std::string s = in.string();
    if (out) *out = std::move(s);
  } else if (is_signed_int(p)) {
    const std::int64_t v = in.svarint();
    if (out) *out = v;
  } else if (is_unsigned_int(p)) {  // every width a varint, uint8 too
    const std::uint64_t v = in.varint();
    if (out) *out = v;
  } else {
    in.fail(fmt::format("the schema uses the unknown primitive type '{}'", p));
  }
}

}  // namespace

void Schema::walk(const json& type, Input& in, Value* out, int depth) const {
  if (depth > kMaxDepth) in.fail("values nested deeper than any MRD type");
  const json t = resolve(type);
  if (t.is_string()) return read_primitive(t.get<std::string>(), in, out);
  if (t.is_array()) {
    const std::uint64_t i = in.varint();
    if (i >= t.size()) in.fail(fmt::format("union case {} of {}", i, t.size()));
    const Case c = union_case(t, std::size_t(i));
    if (c.null) {
      if (out) *out = nullptr;
      return;
    }
    if (!out || is_optional(t)) return walk(c.type, in, out, depth + 1);
    Value inner;
    walk(c.type, in, &inner, depth + 1);
    *out = Value::object({{c.tag, std::move(inner)}});
    return;
  }
  if (t.contains("record")) {
    if (out) *out = Value::object();
    for (const json& f : t["record"]["fields"]) {
      Value fv;
      walk(f["type"], in, out ? &fv : nullptr, depth + 1);
      if (out) (*out)[f["name"].get<std::string>()] = std::move(fv);
    }
    return;
  }
  if (t.contains("enum")) {
    const json& e = t["enum"];
    const std::string base = e.value("base", "int32");
    const std::int64_t n = is_unsigned_int(base) ? std::int64_t(in.varint()) : in.svarint();
    if (!out) return;
    *out = n;
    for (const json& s : e["values"])
      if (s["value"].get<std::int64_t>() == n) *out = s["symbol"];
    return;
  }
  if (t.contains("vector")) {
    const json& vt = t["vector"];
    const json items = resolve(vt["items"]);
    const std::size_t raw = items.is_string() ? raw_size(items.get<std::string>()) : 0;
    const std::uint64_t n = vt.contains("length") ? vt["length"].get<std::uint64_t>()
                                                  : in.count(std::max<std::size_t>(raw, 1), "vector items");
    if (!out && raw) return in.skip(n * raw);
    if (out) *out = Value::array();
    for (std::uint64_t k = 0; k < n; ++k) {
      Value iv;
      walk(items, in, out ? &iv : nullptr, depth + 1);
      if (out) out->push_back(std::move(iv));
    }
    return;
  }
  if (t.contains("array")) {
    const json& at = t["array"];
    std::vector<std::uint64_t> dims;
    if (!at.contains("dimensions")) {
      const std::uint64_t nd = in.count(1, "array dimensions");
      for (std::uint64_t k = 0; k < nd; ++k) dims.push_back(in.varint());
    } else if (at["dimensions"].is_number()) {
      for (int k = 0; k < at["dimensions"].get<int>(); ++k) dims.push_back(in.varint());
    } else {
      for (const json& d : at["dimensions"])
        dims.push_back(d.contains("length") ? d["length"].get<std::uint64_t>() : in.varint());
    }
    const json items = resolve(at["items"]);
    const std::size_t raw = items.is_string() ? raw_size(items.get<std::string>()) : 0;
    const std::uint64_t n = product(dims, in);
    if (n > in.remaining() / std::max<std::size_t>(raw, 1))
      in.need(in.remaining() + 1, fmt::format("an array of {} values", n));
    if (!out && raw) return in.skip(n * raw);
    Value data = Value::array();
    for (std::uint64_t k = 0; k < n; ++k) {
      Value iv;
      walk(items, in, out ? &iv : nullptr, depth + 1);
      if (out) data.push_back(std::move(iv));
    }
    if (out) *out = Value::object({{"dims", dims}, {"data", std::move(data)}});
    return;
  }
  if (t.contains("map")) {
    const std::uint64_t n = in.count(2, "map entries");
    if (out) *out = Value::array();
    for (std::uint64_t k = 0; k < n; ++k) {
      Value key, val;
      walk(t["map"]["keys"], in, out ? &key : nullptr, depth + 1);
      walk(t["map"]["values"], in, out ? &val : nullptr, depth + 1);
      if (out) out->push_back(Value::array({std::move(key), std::move(val)}));
    }
    return;
  }
  in.fail(fmt::format("the schema has a type this reader does not know: {}", t.dump()));
}

void Schema::write(const json& type, const Value& v, Output& out) const {
  put(type, v, out, "");
}

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw InputError(fmt::format("MRD 2 value {}: {}", path.empty() ? "(top)" : path, why));
}

void put_primitive(const std::string& p, const Value& v, Output& out, const std::string& path) {
  try {
    if (p == "bool") {
      const unsigned char b = v.get<bool>() ? 1 : 0;
      out.bytes(&b, 1);
    } else if (p == "float32" || p == "float") {
      out.f32(v.get<float>());
    } else if (p == "float64" || p == "double") {
      out.f64(v.get<double>());
    } else if (raw_size(p) == 8) {
      out.f32(v.at(0).get<float>());
      out.f32(v.at(1).get<float>());
    } else if (raw_size(p) == 16) {
      out.f64(v.at(0).get<double>());
      out.f64(v.at(1).get<double>());
    } else if (p == "string") {
      out.string(v.get<std::string>());
    } else if (is_signed_int(p)) {
      out.svarint(v.get<std::int64_t>());
    } else if (is_unsigned_int(p)) {
      out.varint(v.get<std::uint64_t>());
    } else {
      bad(path, fmt::format("unknown primitive type '{}'", p));
    }
  } catch (const nlohmann::json::exception& e) {
    bad(path, fmt::format("not a {} ({})", p, e.what()));
  }
}

}  // namespace

void Schema::put(const json& type, const Value& v, Output& out, const std::string& path) const {
  const json t = resolve(type);
  if (t.is_string()) return put_primitive(t.get<std::string>(), v, out, path);
  if (t.is_array()) {
    if (v.is_null()) {
      for (std::size_t i = 0; i < t.size(); ++i)
        if (t[i].is_null()) return out.varint(i);
      bad(path, "null for a union without a null case");
    }
    if (is_optional(t)) {
      out.varint(1);
      return put(union_case(t, 1).type, v, out, path);
    }
    if (!v.is_object() || v.size() != 1) bad(path, "a union value is {\"tag\": value}");
    for (std::size_t i = 0; i < t.size(); ++i) {
      const Case c = union_case(t, i);
      if (!c.null && c.tag == v.begin().key()) {
        out.varint(i);
        return put(c.type, v.begin().value(), out, path + "." + c.tag);
      }
    }
    bad(path, fmt::format("no union case '{}'", v.begin().key()));
  }
  if (t.contains("record")) {
    for (const json& f : t["record"]["fields"]) {
      const std::string name = f["name"].get<std::string>();
      const auto it = v.find(name);
      put(f["type"], it == v.end() ? Value() : *it, out, path + "." + name);
    }
    return;
  }
  if (t.contains("enum")) {
    const json& e = t["enum"];
    std::int64_t n = 0;
    if (v.is_string()) {
      bool found = false;
      for (const json& s : e["values"])
        if (s["symbol"] == v) {
          n = s["value"].get<std::int64_t>();
          found = true;
        }
      if (!found)
        bad(path, fmt::format("'{}' is no symbol of {}", v.get<std::string>(), e.value("name", "the enum")));
    } else if (v.is_number_integer()) {
      n = v.get<std::int64_t>();
    } else {
      bad(path, "an enum value is its symbol or its number");
    }
    const std::string base = e.value("base", "int32");
    if (is_unsigned_int(base))
      out.varint(std::uint64_t(n));
    else
      out.svarint(n);
    return;
  }
  if (t.contains("vector")) {
    if (!v.is_array()) bad(path, "a vector is an array");
    const json& vt = t["vector"];
    if (vt.contains("length") && v.size() != vt["length"].get<std::size_t>())
      bad(path, fmt::format("{} items where the vector has {}", v.size(), vt["length"].get<std::size_t>()));
    if (!vt.contains("length")) out.varint(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) put(vt["items"], v[k], out, fmt::format("{}[{}]", path, k));
    return;
  }
  if (t.contains("array")) {
    const json& at = t["array"];
    if (!v.is_object() || !v.contains("dims") || !v.contains("data"))
      bad(path, "an array is {\"dims\", \"data\"}");
    const auto dims = v["dims"].get<std::vector<std::uint64_t>>();
    std::uint64_t n = 1;
    for (auto d : dims) n *= d;
    if (n != v["data"].size()) bad(path, "the data's length is not the product of the dims");
    if (!at.contains("dimensions")) {
      out.varint(dims.size());
      for (auto d : dims) out.varint(d);
    } else if (at["dimensions"].is_number()) {
      if (dims.size() != at["dimensions"].get<std::size_t>()) bad(path, "the wrong number of dimensions");
      for (auto d : dims) out.varint(d);
    } else {
      if (dims.size() != at["dimensions"].size()) bad(path, "the wrong number of dimensions");
      for (std::size_t k = 0; k < dims.size(); ++k) {
        const json& d = at["dimensions"][k];
        if (d.contains("length")) {
          if (d["length"].get<std::uint64_t>() != dims[k]) bad(path, "a fixed dimension of another length");
        } else {
          out.varint(dims[k]);
        }
      }
    }
    for (const Value& x : v["data"]) put(at["items"], x, out, path + "[]");
    return;
  }
  if (t.contains("map")) {
    if (!v.is_array()) bad(path, "a map is an array of [key, value] pairs");
    out.varint(v.size());
    for (const Value& kv : v) {
      put(t["map"]["keys"], kv.at(0), out, path + ".key");
      put(t["map"]["values"], kv.at(1), out, path + ".value");
    }
    return;
  }
  bad(path, fmt::format("a type this writer does not know: {}", t.dump()));
}

}  // namespace radstream::yardl
