// Reading the bearer token that guards the executives' control ports, from a file only its owner may read.
#pragma once

#include <string>

namespace daqx {

// The token in `path`: its text without the trailing line break. Throws std::runtime_error, naming the file and
// the reason, when it cannot be read, is empty, is longer than 4 KiB, holds anything but visible ASCII (it goes
// into an HTTP header) or when group or others have any permission on it (the token is then no secret: chmod 600).
std::string read_token_file(const std::string& path);

}  // namespace daqx
