// What every writer of the control API's JSON shares (json.cpp, partition_json.cpp): objects that keep their keys
// in the order written, numbers JSON can carry, one document as text.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include <Poco/Dynamic/Var.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>

#include "daqx/services/text.hpp"

namespace daqx::http {

// Key order as written reads better than alphabetical when a person looks at the API.
inline Poco::JSON::Object::Ptr new_object() { return new Poco::JSON::Object(Poco::JSON_PRESERVE_KEY_ORDER); }

// JSON has no NaN or infinity: null instead.
inline Poco::Dynamic::Var number(double value) {
  if (!std::isfinite(value)) return Poco::Dynamic::Var();
  return value;
}

// The document as text, always valid UTF-8: names, reasons and parameters come from partitions and applications,
// which may hold any bytes; a byte that is not UTF-8 becomes U+FFFD (Poco writes control characters as \u escapes).
inline std::string stringify(const Poco::Dynamic::Var& document) {
  std::ostringstream out;
  if (document.type() == typeid(Poco::JSON::Object::Ptr)) {
    document.extract<Poco::JSON::Object::Ptr>()->stringify(out);
  } else {
    document.extract<Poco::JSON::Array::Ptr>()->stringify(out);
  }
  return strings::valid_utf8(out.str());
}

}  // namespace daqx::http
