// The JSON reader: recursive descent over the text, at most 64 levels deep.
#include "json_reader.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace daqx::test {

namespace {

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : text_(text) {}

  Json document() {
    Json value = read_value(0);
    skip_space();
    if (at_ < text_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("invalid JSON at offset " + std::to_string(at_) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }
  char peek() {
    skip_space();
    if (at_ >= text_.size()) fail("unexpected end");
    return text_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Json read_value(int depth) {
    if (depth > 64) fail("too deep");
    Json value;
    const char c = peek();
    if (c == '{') {
      value.type = Json::Type::object;
      ++at_;
      if (peek() == '}') {
        ++at_;
        return value;
      }
      for (;;) {
        if (peek() != '"') fail("expected a member name");
        value.keys.push_back(read_string());
        expect(':');
        value.items.push_back(read_value(depth + 1));
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect('}');
        return value;
      }
    }
    if (c == '[') {
      value.type = Json::Type::array;
      ++at_;
      if (peek() == ']') {
        ++at_;
        return value;
      }
      for (;;) {
        value.items.push_back(read_value(depth + 1));
        if (peek() == ',') {
          ++at_;
          continue;
        }
        expect(']');
        return value;
      }
    }
    if (c == '"') {
      value.type = Json::Type::string;
      value.string = read_string();
      return value;
    }
    if (literal("true") || literal("false")) {
      value.type = Json::Type::boolean;
      value.boolean = text_[at_ - 1] == 'e' && text_[at_ - 2] == 'u';
      return value;
    }
    if (literal("null")) return value;
    return read_number();
  }

  Json read_number() {
    const std::size_t start = at_;
    auto digits = [&] {
      const std::size_t first = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - first;
    };
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    if (at_ < text_.size() && text_[at_] == '0') {
      ++at_;
    } else if (digits() == 0) {
      fail("expected a value");
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (digits() == 0) fail("expected an exponent");
    }
    Json value;
    value.type = Json::Type::number;
    value.number = std::strtod(std::string(text_.substr(start, at_ - start)).c_str(), nullptr);
    return value;
  }

  std::string read_string() {
    ++at_;  // the opening quote
    std::string text;
    for (;;) {
      if (at_ >= text_.size()) fail("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return text;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        text += c;
        continue;
      }
      if (at_ >= text_.size()) fail("unterminated escape");
      const char escaped = text_[at_++];
      switch (escaped) {
        case '"': text += '"'; break;
        case '\\': text += '\\'; break;
        case '/': text += '/'; break;
        case 'b': text += '\b'; break;
        case 'f': text += '\f'; break;
        case 'n': text += '\n'; break;
        case 'r': text += '\r'; break;
        case 't': text += '\t'; break;
        case 'u': append_utf8(text, read_code_point()); break;
        default: fail("bad escape");
      }
    }
  }

  unsigned read_hex4() {
    if (at_ + 4 > text_.size()) fail("short \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 3; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9') value += static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') value += static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') value += static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit");
    }
    return value;
  }

  unsigned read_code_point() {
    const unsigned first = read_hex4();
    if (first < 0xD800 || first > 0xDBFF) return first;
    if (!literal("\\u")) fail("lone surrogate");
    const unsigned second = read_hex4();
    return 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
  }

  static void append_utf8(std::string& text, unsigned code) {
    if (code < 0x80) {
      text += static_cast<char>(code);
    } else if (code < 0x800) {
      text += static_cast<char>(0xC0 | (code >> 6));
      text += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      text += static_cast<char>(0xE0 | (code >> 12));
      text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      text += static_cast<char>(0xF0 | (code >> 18));
      text += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      text += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      text += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

Json parse_json(const std::string& text) { return JsonReader(text).document(); }

}  // namespace daqx::test
