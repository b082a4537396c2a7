// The MRD 2.2.1 protocol schema (ismrmrd/mrd's model, as yardl 0.6 writes it into every binary MRD 2 file)
// and the fingerprints of the earlier MRD 2 releases' schemas, so that a file of another release is named by
// its version when it is refused.
#pragma once
#include <cstdint>
#include <string>

#include "io/yardl_schema.hpp"

namespace radstream::mrd2 {

// The schema text exactly as MRD 2.2.1 writes it (ismrmrd/mrd v2.2.1, model/*.yml; MIT licence).
const std::string& schema_text();

// That schema, parsed once.
const yardl::Schema& schema();

// The MRD release whose schema this is ("2.2.1", "2.2.0", "2.1.x", "2.0.x"), or "" for an unknown one.
std::string schema_release(const std::string& text);

// FNV-1a, 64 bits: the fingerprint the table of releases is kept in.
std::uint64_t fnv1a(const std::string& text);

}  // namespace radstream::mrd2
