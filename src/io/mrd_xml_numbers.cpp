#include "io/mrd_xml_numbers.hpp"

#include <fmt/format.h>

#include <cctype>
#include <pugixml.hpp>
#include <string>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {

// The field's text (trimmed) as a whole number in [lo, hi], or false.
bool whole_in(const std::string& text, long lo, long hi) {
  std::size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  const std::string t = text.substr(a, b - a);
  if (t.empty() || t.size() > 12) return false;
  std::size_t i = t[0] == '+' ? 1 : 0;
  if (i == t.size()) return false;
  for (std::size_t k = i; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k]))) return false;
  const long v = std::stol(t.substr(i));
  return v >= lo && v <= hi;
}

void check(const pugi::xml_node& node, const std::string& path, long lo, long hi, const std::string& ctx) {
  if (!node) return;
  const std::string text = node.text().get();
  if (!whole_in(text, lo, hi))
    throw IoError(fmt::format("{}: the MRD XML header's {} is '{}' (allowed: a whole number {}..{})", ctx,
                              path, log::printable_line(text, 40), lo, hi));
}

}  // namespace

void check_mrd_xml_numbers(const std::string& xml, const std::string& ctx) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return;  // ISMRMRD's parser names what is malformed
  const pugi::xml_node root = doc.child("ismrmrdHeader");
  check(root.child("acquisitionSystemInformation").child("receiverChannels"),
        "acquisitionSystemInformation/receiverChannels", 1, 65535, ctx);
  int k = 0;
  for (pugi::xml_node e = root.child("encoding"); e; e = e.next_sibling("encoding"), ++k) {
    for (const char* space : {"encodedSpace", "reconSpace"})
      for (const char* axis : {"x", "y", "z"})
        check(e.child(space).child("matrixSize").child(axis),
              fmt::format("encoding[{}]/{}/matrixSize/{}", k, space, axis), 1, 65535, ctx);
    for (pugi::xml_node lim = e.child("encodingLimits").first_child(); lim; lim = lim.next_sibling())
      for (const char* f : {"minimum", "maximum", "center"})
        check(lim.child(f), fmt::format("encoding[{}]/encodingLimits/{}/{}", k, lim.name(), f), 0, 65535,
              ctx);
  }
}

}  // namespace radstream
