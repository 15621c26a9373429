// The well-formedness rules pugixml does not apply (XML 1.0 sections 2.2, 2.3, 3.1, 4.1), checked over the raw
// text: its characters first; then markup is skipped as XML skips it (comments, CDATA, processing instructions),
// start tags are read for their attribute values, text for its references.
#include "xml_well_formed.hpp"

#include <unordered_set>

#include "daqx/services/text.hpp"

namespace daqx::config {
namespace {

using strings::concatenate;
using strings::quoted;

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool xml_character(unsigned long code) {
  return code == 0x9 || code == 0xA || code == 0xD || (code >= 0x20 && code <= 0xD7FF) ||
         (code >= 0xE000 && code <= 0xFFFD) || (code >= 0x10000 && code <= 0x10FFFF);
}

// Why the '&' at `at` does not begin a reference (&lt; &gt; &amp; &quot; &apos; &#DDD; &#xHHH;); empty when it does.
std::string reference_fault(std::string_view xml, std::size_t at) {
  constexpr std::size_t kLongest = 12;  // "&#x10FFFF;" and the named ones fit
  const std::size_t end = xml.find(';', at + 1);
  if (end == std::string_view::npos || end - at > kLongest || end == at + 1)
    return "an '&' that begins no reference (write &amp; for the character itself)";
  const std::string_view name = xml.substr(at + 1, end - at - 1);
  if (name == "lt" || name == "gt" || name == "amp" || name == "quot" || name == "apos") return {};
  if (!name.starts_with('#'))
    return concatenate({"the entity ", quoted(concatenate({"&", name, ";"})),
                        " is not one of XML's own (&lt; &gt; &amp; &quot; &apos;), and a partition declares none"});
  const bool hex = name.size() > 1 && name[1] == 'x';
  const std::string_view digits = name.substr(hex ? 2 : 1);
  unsigned long code = 0;
  bool valid = !digits.empty();
  for (char c : digits) {
    int value = -1;
    if (c >= '0' && c <= '9') value = c - '0';
    else if (hex && c >= 'a' && c <= 'f') value = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F') value = c - 'A' + 10;
    if (value < 0) {
      valid = false;
      break;
    }
    code = code * (hex ? 16 : 10) + static_cast<unsigned long>(value);
  }
  if (!valid) return concatenate({"the character reference ", quoted(concatenate({"&", name, ";"})), " is not a number"});
  if (!xml_character(code))
    return concatenate({"the character reference ", quoted(concatenate({"&", name, ";"})),
                        " is not a character XML allows"});
  return {};
}

class Scan {
 public:
  explicit Scan(std::string_view xml) : xml_(xml) {}

  std::optional<XmlFault> run() {
    characters();
    while (at_ < xml_.size() && !fault_) {
      const char c = xml_[at_];
      if (c == '<') {
        markup();
      } else if (c == '&') {
        reference(at_);
        ++at_;
      } else {
        ++at_;
      }
    }
    return fault_;
  }

 private:
  void fail(std::size_t offset, std::string reason) { fault_ = XmlFault{offset, std::move(reason)}; }

  // Every byte is part of a character XML allows (section 2.2): no control character but tab, line feed and
  // carriage return, and well-formed UTF-8, the encoding of a partition file.
  void characters() {
    for (std::size_t i = 0; i < xml_.size() && !fault_;) {
      const auto byte = static_cast<unsigned char>(xml_[i]);
      if (byte < 0x80) {
        if (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r')
          fail(i, concatenate({"a control character (", strings::printable(xml_.substr(i, 1), 8),
                               ") XML does not allow in a document"}));
        ++i;
        continue;
      }
      const std::size_t length = strings::utf8_sequence(xml_, i);
      if (length == 0)
        fail(i, concatenate({"a byte that is not UTF-8 (", strings::printable(xml_.substr(i, 1), 8),
                             "): a partition file is UTF-8"}));
      i += length == 0 ? 1 : length;
    }
  }

  // Skips past `terminator`; pugixml reports a missing one.
  void skip_past(std::string_view terminator, std::size_t from) {
    const std::size_t end = xml_.find(terminator, from);
    at_ = end == std::string_view::npos ? xml_.size() : end + terminator.size();
  }

  void markup() {
    const std::string_view rest = xml_.substr(at_);
    if (rest.starts_with("<!--")) return skip_past("-->", at_ + 4);
    if (rest.starts_with("<![CDATA[")) return skip_past("]]>", at_ + 9);
    if (rest.starts_with("<?")) return skip_past("?>", at_ + 2);
    if (rest.starts_with("<!") || rest.starts_with("</")) return skip_past(">", at_ + 2);
    start_tag();
  }

  void reference(std::size_t at) {
    if (std::string reason = reference_fault(xml_, at); !reason.empty()) fail(at, std::move(reason));
  }

  // <name attribute="value" ...> or .../>: each value free of '<' and of bad references, each name once.
  void start_tag() {
    std::size_t at = at_ + 1;
    const std::size_t name_start = at;
    while (at < xml_.size() && !blank(xml_[at]) && xml_[at] != '>' && xml_[at] != '/' && xml_[at] != '<') ++at;
    const std::string_view element = xml_.substr(name_start, at - name_start);
    names_.clear();
    for (;;) {
      while (at < xml_.size() && blank(xml_[at])) ++at;
      if (at >= xml_.size() || xml_[at] == '>' || xml_[at] == '/' || xml_[at] == '<') break;  // the tag's end: pugixml's
      const std::size_t attribute_start = at;
      while (at < xml_.size() && !blank(xml_[at]) && xml_[at] != '=' && xml_[at] != '>' && xml_[at] != '<') ++at;
      const std::string_view attribute = xml_.substr(attribute_start, at - attribute_start);
      while (at < xml_.size() && blank(xml_[at])) ++at;
      if (at >= xml_.size() || xml_[at] != '=') break;  // pugixml says what is wrong
      ++at;
      while (at < xml_.size() && blank(xml_[at])) ++at;
      if (at >= xml_.size() || (xml_[at] != '"' && xml_[at] != '\'')) break;
      const char quote = xml_[at];
      const std::size_t value_end = xml_.find(quote, at + 1);
      if (value_end == std::string_view::npos) break;
      for (std::size_t i = at + 1; i < value_end && !fault_; ++i) {
        if (xml_[i] == '<')
          fail(i, concatenate({"a '<' in the value of attribute ", quoted(attribute), " of <", strings::printable(element, 64),
                               ">: not well-formed XML (write &lt;)"}));
        else if (xml_[i] == '&')
          reference(i);
      }
      if (fault_) return;
      if (!names_.insert(attribute).second) {
        fail(attribute_start, concatenate({"attribute ", quoted(attribute), " appears more than once on <",
                                           strings::printable(element, 64), ">"}));
        return;
      }
      at = value_end + 1;
    }
    at_ = at;
  }

  std::string_view xml_;
  std::size_t at_ = 0;
  std::unordered_set<std::string_view> names_;  // of the start tag being read
  std::optional<XmlFault> fault_;
};

}  // namespace

std::optional<XmlFault> first_well_formedness_fault(std::string_view xml) { return Scan(xml).run(); }

}  // namespace daqx::config
