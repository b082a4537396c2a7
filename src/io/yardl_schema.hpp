// A yardl protocol schema (the JSON that every yardl binary file carries after its magic and version) and a
// codec driven by it: any value of any type the schema names is read, skipped or written from its JSON
// description, as yardl's binary encoding reference lays values out. MRD 2's header and the stream items that
// radstream does not take (waveforms, Pulseq, intermediate data) go through here; acquisitions have a typed
// fast path (io/mrd2_file.cpp) that the tests check against this codec.
//
// Values are JSON (nlohmann::ordered_json): a record is an object in field order; an optional is its value or
// null; another union is {"tag": value}; a vector is an array; an array is {"dims": [...], "data": [flat,
// row-major]}; a map is an array of [key, value] pairs; an enum is its symbol (or its number when no symbol
// has that value, as flags combined); complex numbers are [re, im]; a date is days since 1970-01-01, a time
// nanoseconds since midnight, a datetime nanoseconds since the epoch.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "io/yardl_binary.hpp"

namespace radstream::yardl {

using Value = nlohmann::ordered_json;

class Schema {
 public:
  // Throws IoError naming `source` when the text is not a schema this codec understands.
  Schema(const std::string& json_text, const std::string& source);
  const nlohmann::json& protocol() const { return protocol_; }
  // The type of a protocol step by name ("header"; a stream's item type for a stream step).
  const nlohmann::json& step_type(const std::string& step) const;

  Value read(const nlohmann::json& type, Input& in) const;
  void skip(const nlohmann::json& type, Input& in) const;
  // Throws InputError naming the field path when the value does not have the type's shape.
  void write(const nlohmann::json& type, const Value& v, Output& out) const;

  // A named type's definition (a record's fields, an enum's values, an alias), generics instantiated.
  nlohmann::json resolve(const nlohmann::json& type) const;

 private:
  nlohmann::json protocol_;
  std::map<std::string, nlohmann::json> types_;  // by name without the namespace
  void walk(const nlohmann::json& type, Input& in, Value* out, int depth) const;
  void put(const nlohmann::json& type, const Value& v, Output& out, const std::string& path) const;
};

}  // namespace radstream::yardl
