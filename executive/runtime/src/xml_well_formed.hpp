// What pugixml lets through of XML that is not well formed (it parses leniently): a '<' in an attribute value, an
// '&' that begins no reference, an unknown entity, a character reference to what is not an XML character, an
// attribute twice on one element. The partition loader refuses these before pugixml reads the text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace daqx::config {

struct XmlFault {
  std::size_t offset = 0;  // of the byte at fault
  std::string reason;      // one line; quotes only printable, cut text
};

// The first such fault in `xml`, in text order; nothing when there is none. Faults pugixml itself refuses
// (unterminated elements, mismatched end tags) are left to it, with its own reason.
std::optional<XmlFault> first_well_formedness_fault(std::string_view xml);

}  // namespace daqx::config
