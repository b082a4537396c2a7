// The MRD header both ways between MRD v1 (the ismrmrdHeader XML) and MRD 2 (the Header record), driven by
// the schema: MRD 2's Header took its fields from the v1 XML schema (ismrmrd.xsd), so a field is the XML
// element of the same name, a vector is the element repeated, an optional one may be absent, an enum is its
// symbol; the few names that MRD 2 respelled (kspace_encoding_step_1 -> kspaceEncodingStep1,
// fieldOfView_mm -> fieldOfViewMm, TR -> tR, HFS -> hFS, ...) are listed in the .cpp.
#pragma once
#include <string>

#include "io/yardl_schema.hpp"

namespace radstream::mrd2 {

// Throws IoError naming `context` and the element when the XML is malformed or lacks a field MRD 2 requires.
yardl::Value header_from_xml(const yardl::Schema& schema, const std::string& xml, const std::string& context);
std::string header_to_xml(const yardl::Schema& schema, const yardl::Value& header);

}  // namespace radstream::mrd2
