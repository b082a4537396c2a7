#include "io/mrd2_header.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <pugixml.hpp>
#include <sstream>

#include "core/error.hpp"

namespace radstream::mrd2 {

using nlohmann::json;
using yardl::Value;

namespace {

// MRD 2 field name -> its v1 XML element, where they differ (ismrmrd.xsd 1.13 against model/mrd_header.yml).
const std::map<std::string, std::string>& xml_names() {
  static const std::map<std::string, std::string> m{
      {"kspaceEncodingStep0", "kspace_encoding_step_0"},
      {"kspaceEncodingStep1", "kspace_encoding_step_1"},
      {"kspaceEncodingStep2", "kspace_encoding_step_2"},
      {"user0", "user_0"},
      {"user1", "user_1"},
      {"user2", "user_2"},
      {"user3", "user_3"},
      {"user4", "user_4"},
      {"user5", "user_5"},
      {"user6", "user_6"},
      {"user7", "user_7"},
      {"fieldOfViewMm", "fieldOfView_mm"},
      {"systemFieldStrengthT", "systemFieldStrength_T"},
      {"h1resonanceFrequencyHz", "H1resonanceFrequency_Hz"},
      {"patientWeightKg", "patientWeight_kg"},
      {"patientHeightM", "patientHeight_m"},
      {"tR", "TR"},
      {"tE", "TE"},
      {"tI", "TI"},
      {"flipAngleDeg", "flipAngle_deg"},
      {"sequenceType", "sequence_type"},
      {"echoSpacing", "echo_spacing"},
      {"multibandFactor", "multiband_factor"},
      {"calibrationEncoding", "calibration_encoding"},
  };
  return m;
}

std::string xml_name(const std::string& field) {
  const auto it = xml_names().find(field);
  return it == xml_names().end() ? field : it->second;
}

// An enum symbol compared with XML's spelling: case and underscores aside ("HFS" = "hFS", "user_0" =
// "user0").
std::string folded(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(char(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// XML's spelling of an enum symbol: patient positions and genders in capitals, the user dimensions with an
// underscore.
std::string xml_symbol(const std::string& enum_name, const std::string& symbol) {
  if (enum_name == "PatientPosition" || enum_name == "PatientGender") {
    std::string s = symbol;
    for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }
  if (symbol.size() == 5 && symbol.rfind("user", 0) == 0) return "user_" + symbol.substr(4);
  return symbol;
}

// Days since 1970-01-01 of a civil date, and back (the proleptic Gregorian calendar; H. Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + std::int64_t(doe) - 719468;
}

std::string civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = unsigned(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = std::int64_t(yoe) + era * 400 + (m <= 2);
  return fmt::format("{:04}-{:02}-{:02}", y, m, d);
}

struct Converter {
  const yardl::Schema& schema;
  std::string context;

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw IoError(fmt::format("{}: MRD header {}: {}", context, path, why));
  }

  Value primitive(const std::string& p, const std::string& text, const std::string& path) const {
    try {
      std::size_t used = 0;
      if (p == "string") return text;
      if (p == "bool") return text == "true" || text == "1";
      if (p == "float32" || p == "float64") {
        const double v = std::stod(text, &used);
        return p == "float32" ? Value(float(v)) : Value(v);
      }
      if (p == "date") {
        int y = 0;
        unsigned m = 0, d = 0;
        if (std::sscanf(text.c_str(), "%d-%u-%u", &y, &m, &d) != 3 || m < 1 || m > 12 || d < 1 || d > 31)
          fail(path, fmt::format("'{}' is not a date (YYYY-MM-DD)", text));
        return days_from_civil(y, m, d);
      }
      if (p == "time") {
        unsigned h = 0, mi = 0;
        double s = 0;
        if (std::sscanf(text.c_str(), "%u:%u:%lf", &h, &mi, &s) != 3 || h > 23 || mi > 59 || s < 0 || s >= 61)
          fail(path, fmt::format("'{}' is not a time (HH:MM:SS)", text));
        return std::int64_t((h * 3600 + mi * 60) * 1000000000LL + std::llround(s * 1e9));
      }
      if (p[0] == 'u' || p == "size") {
        if (!text.empty() && text[0] == '-') fail(path, fmt::format("'{}' is negative", text));
        return std::uint64_t(std::stoull(text, &used));
      }
      return std::int64_t(std::stoll(text, &used));
    } catch (const std::logic_error&) {
      fail(path, fmt::format("'{}' is not a {}", text, p));
    }
  }

  Value from_xml(const json& type, const pugi::xml_node& node, const std::string& path) const {
    const json t = schema.resolve(type);
    if (t.is_string()) return primitive(t.get<std::string>(), node.text().as_string(), path);
    if (t.contains("enum")) {
      const std::string text = node.text().as_string();
      for (const json& s : t["enum"]["values"])
        if (folded(s["symbol"].get<std::string>()) == folded(text)) return s["symbol"];
      fail(path, fmt::format("'{}' is not one of the {} values", text, t["enum"].value("name", "enum")));
    }
    if (!t.contains("record"))
      fail(path, fmt::format("a type the header mapping does not know: {}", t.dump()));
    Value out = Value::object();
    for (const json& f : t["record"]["fields"]) {
      const std::string name = f["name"].get<std::string>(), xname = xml_name(name), sub = path + "." + xname;
      const json ft = schema.resolve(f["type"]);
      if (ft.is_array()) {  // an optional
        const pugi::xml_node c = node.child(xname.c_str());
        out[name] = c ? from_xml(ft[1], c, sub) : Value();
      } else if (ft.is_object() && ft.contains("vector")) {
        Value items = Value::array();
        for (pugi::xml_node c = node.child(xname.c_str()); c; c = c.next_sibling(xname.c_str()))
          items.push_back(from_xml(ft["vector"]["items"], c, sub));
        out[name] = std::move(items);
      } else {
        const pugi::xml_node c = node.child(xname.c_str());
        if (!c) fail(sub, "required by MRD 2, absent from the XML");
        out[name] = from_xml(f["type"], c, sub);
      }
    }
    return out;
  }

  void text_of(const std::string& p, const Value& v, pugi::xml_node& e) const {
    std::string s;
    if (p == "string")
      s = v.get<std::string>();
    else if (p == "bool")
      s = v.get<bool>() ? "true" : "false";
    else if (p == "float32")
      s = fmt::format("{}", v.get<float>());
    else if (p == "float64")
      s = fmt::format("{}", v.get<double>());
    else if (p == "date")
      s = civil_from_days(v.get<std::int64_t>());
    else if (p == "time") {
      const std::int64_t ns = v.get<std::int64_t>();
      s = fmt::format("{:02}:{:02}:{:02}", ns / 3600000000000LL, ns / 60000000000LL % 60,
                      ns / 1000000000LL % 60);
      if (ns % 1000000000LL) s += fmt::format(".{:09}", ns % 1000000000LL);
    } else if (p[0] == 'u')
      s = std::to_string(v.get<std::uint64_t>());
    else
      s = std::to_string(v.get<std::int64_t>());
    e.text().set(s.c_str());
  }

  void to_xml(const json& type, const Value& v, pugi::xml_node& parent, const std::string& xname) const {
    const json t = schema.resolve(type);
    pugi::xml_node e = parent.append_child(xname.c_str());
    if (t.is_string()) return text_of(t.get<std::string>(), v, e);
    if (t.contains("enum")) {
      const std::string sym = v.is_string() ? v.get<std::string>() : std::to_string(v.get<std::int64_t>());
      e.text().set(xml_symbol(t["enum"].value("name", ""), sym).c_str());
      return;
    }
    for (const json& f : t["record"]["fields"]) {
      const std::string name = f["name"].get<std::string>();
      const auto it = v.find(name);
      if (it == v.end() || it->is_null()) continue;
      const json ft = schema.resolve(f["type"]);
      if (ft.is_array()) {
        to_xml(ft[1], *it, e, xml_name(name));
      } else if (ft.is_object() && ft.contains("vector")) {
        for (const Value& item : *it) to_xml(ft["vector"]["items"], item, e, xml_name(name));
      } else {
        to_xml(f["type"], *it, e, xml_name(name));
      }
    }
  }
};

}  // namespace

Value header_from_xml(const yardl::Schema& schema, const std::string& xml, const std::string& context) {
  pugi::xml_document doc;
  const pugi::xml_parse_result r = doc.load_string(xml.c_str());
  if (!r) throw IoError(fmt::format("{}: the MRD header is not XML: {}", context, r.description()));
  const pugi::xml_node root = doc.child("ismrmrdHeader");
  if (!root) throw IoError(fmt::format("{}: the MRD header has no ismrmrdHeader element", context));
  return Converter{schema, context}.from_xml("Mrd.Header", root, "ismrmrdHeader");
}

std::string header_to_xml(const yardl::Schema& schema, const Value& header) {
  pugi::xml_document doc;
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  Converter{schema, "MRD 2 header"}.to_xml("Mrd.Header", header, doc, "ismrmrdHeader");
  pugi::xml_node root = doc.child("ismrmrdHeader");
  root.prepend_attribute("xmlns") = "http://www.ismrm.org/ISMRMRD";
  std::ostringstream os;
  doc.save(os, "  ");
  return os.str();
}

}  // namespace radstream::mrd2
