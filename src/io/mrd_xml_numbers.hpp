// The numbers of an MRD XML header that radstream reads, checked as written before ISMRMRD's parser stores
// them: it reads matrixSize, receiverChannels and the encoding limits into 16-bit fields, so a matrix of 1e9
// or -64 used to become 51712 or 65472 and be reported (or used) as that.
#pragma once
#include <string>

namespace radstream {

// Throws IoError naming ctx, the field's path and its text as written when one of those fields is not a whole
// number in its range (matrix sizes and receiverChannels 1..65535, encoding limits 0..65535). A malformed
// document is left to ISMRMRD's parser, which names it.
void check_mrd_xml_numbers(const std::string& xml, const std::string& ctx);

}  // namespace radstream
