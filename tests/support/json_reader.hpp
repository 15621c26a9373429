// A strict JSON reader, independent of the server's Poco::JSON, so that what a server writes is checked from
// outside: RFC 8259's grammar, no trailing characters, strings decoded (escapes, surrogate pairs) to UTF-8.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace daqx::test {

// A JSON value; a member or element that is not there throws std::runtime_error (std::out_of_range for an index).
struct Json {
  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<std::string> keys;  // object member names, in order
  std::vector<Json> items;        // array elements, or object member values

  bool is(Type wanted) const { return type == wanted; }
  bool has(const std::string& key) const {
    for (const std::string& name : keys) {
      if (name == key) return true;
    }
    return false;
  }
  const Json& operator[](const std::string& key) const {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == key) return items[i];
    }
    throw std::runtime_error("no member \"" + key + "\"");
  }
  const Json& operator[](std::size_t index) const { return items.at(index); }
  std::size_t size() const { return items.size(); }
};

// The document `text` holds; std::runtime_error naming the offset and what was wrong when it is not JSON.
Json parse_json(const std::string& text);

}  // namespace daqx::test
