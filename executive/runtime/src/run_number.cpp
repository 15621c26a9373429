// The run file: created whole by link(), locked with flock, rewritten in place and fsync'd (run_number.hpp).
#include "daqx/executive/run_number.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"

namespace daqx {
namespace {

// A run file is a number and a newline; anything much longer is not one.
constexpr std::size_t kMaxFileBytes = 64;

// The messages quote a path and a damaged file's bytes: one printable line whatever they hold.
[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw RunNumberError(strings::printable("run file " + path + ": " + what + ": " + std::strerror(error)));
}

[[noreturn]] void damaged(const std::string& path, const std::string& what) {
  throw RunNumberError(strings::printable("run file " + path + ": " + what +
                                          " (it should hold the last run number and a newline; repair it by hand)"));
}

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

void lock(int fd, int operation, const std::string& path) {
  while (::flock(fd, operation) != 0) {
    if (errno != EINTR) fail(path, "cannot lock", errno);
  }
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t written = ::pwrite(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot write", errno);
    }
    if (written == 0) fail(path, "cannot write", EIO);
    done += static_cast<std::size_t>(written);
  }
}

std::string directory_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Makes the file, holding "0\n", unless it exists. Written under a temporary name and linked into place, so the
// file appears whole or not at all, and of two processes creating it at once one link simply loses.
void create_if_missing(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) return;
  if (errno != ENOENT) fail(path, "cannot look at", errno);
  std::string temporary = path + ".new-XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) fail(path, "cannot create a file beside it (" + temporary + ")", errno);
  Descriptor file(fd);
  const auto give_up = [&](const std::string& what, int error) {
    ::unlink(temporary.c_str());
    fail(path, what, error);
  };
  if (::fchmod(fd, 0644) != 0) give_up("cannot set the mode of " + temporary, errno);
  ssize_t written = 0;
  do {
    errno = 0;
    written = ::write(fd, "0\n", 2);
  } while (written < 0 && errno == EINTR);
  // Two bytes either go or do not; a short count without errno is the disk being full.
  if (written != 2) give_up("cannot write " + temporary, errno != 0 ? errno : ENOSPC);
  if (::fsync(fd) != 0) give_up("cannot flush " + temporary, errno);
  if (::link(temporary.c_str(), path.c_str()) != 0 && errno != EEXIST) give_up("cannot create", errno);
  ::unlink(temporary.c_str());
  // The new name on disk too, so a run allocated right after a power cut does not start from nothing again.
  const int directory = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {
    ::fsync(directory);
    ::close(directory);
  }
}

// The number in the file, which the caller has locked.
std::uint64_t read_number(int fd, const std::string& path) {
  char buffer[kMaxFileBytes + 1];
  std::size_t length = 0;
  for (;;) {
    const ssize_t got = ::pread(fd, buffer + length, sizeof buffer - length, static_cast<off_t>(length));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot read", errno);
    }
    if (got == 0 || (length += static_cast<std::size_t>(got)) == sizeof buffer) break;
  }
  if (length > kMaxFileBytes) damaged(path, "more than " + std::to_string(kMaxFileBytes) + " bytes");
  std::string_view text(buffer, length);
  if (text.empty()) damaged(path, "is empty");
  // What next() writes: the number and one line feed (a file written by hand without it is read alike).
  if (text.back() == '\n') text.remove_suffix(1);
  const numbers::Parsed<std::uint64_t> number = numbers::parse_unsigned(text, 0, kMaxRunNumber);
  if (!number) damaged(path, "does not hold a run number: " + number.error);
  return *number;
}

}  // namespace

std::uint64_t RunNumberFile::next() {
  create_if_missing(path_);
  // Locked on the file itself, which is rewritten in place (a rename would move the lock's inode away).
  Descriptor file(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
  if (file.get() < 0) fail(path_, "cannot open", errno);
  lock(file.get(), LOCK_EX, path_);
  const std::uint64_t last = read_number(file.get(), path_);
  if (last >= kMaxRunNumber) damaged(path_, "holds the largest run number " + std::to_string(last) + ": none left");
  const std::uint64_t run = last + 1;
  // Numbers only grow, so the new text is never shorter and covers the old one: the file is never empty.
  const std::string text = std::to_string(run) + "\n";
  write_all(file.get(), text, path_);
  if (::ftruncate(file.get(), static_cast<off_t>(text.size())) != 0) fail(path_, "cannot truncate", errno);
  if (::fsync(file.get()) != 0) fail(path_, "cannot flush", errno);
  return run;  // the lock goes with the descriptor
}

std::uint64_t RunNumberFile::current() const {
  Descriptor file(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) {
    if (errno == ENOENT) return 0;
    fail(path_, "cannot open", errno);
  }
  lock(file.get(), LOCK_SH, path_);
  return read_number(file.get(), path_);
}

}  // namespace daqx
