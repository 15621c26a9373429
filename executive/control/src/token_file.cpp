// Reads a bearer token file and refuses one that is not a secret or could not travel in an HTTP header.
#include "daqx/control/token_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace daqx {
namespace {

constexpr std::size_t kMaxToken = 4096;  // tokens are tens of bytes; a large file is a wrong path

[[noreturn]] void refuse(const std::string& path, const std::string& reason) {
  throw std::runtime_error("token file " + path + ": " + reason);
}

}  // namespace

std::string read_token_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) refuse(path, std::strerror(errno));
  if (!S_ISREG(status.st_mode)) refuse(path, "not a regular file");
  // Refused rather than warned about: a warning in a log nobody reads would leave the port guarded by a public
  // secret. The same rule as ssh's for private keys.
  if ((status.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(status.st_mode & 07777));
    refuse(path, std::string("group or others may read it (mode ") + mode + "): chmod 600 " + path);
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) refuse(path, std::strerror(errno));
  std::string token(kMaxToken + 1, '\0');
  const std::size_t count = std::fread(token.data(), 1, token.size(), file);
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) refuse(path, "cannot read it");
  if (count > kMaxToken) refuse(path, "longer than 4096 bytes: not a token");
  token.resize(count);
  // Editors and `echo` end the file with a line break, which is not part of the token.
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) refuse(path, "empty");
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) refuse(path, "holds a blank, a line break or a non-ASCII character: one line of visible ASCII is a token");
  }
  return token;
}

}  // namespace daqx
