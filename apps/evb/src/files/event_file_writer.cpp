// FileWriter: records written with writev straight from the event's pieces, files rotated by size and
// written under a temporary name until closed, writing paced for slow storage.
#include "files/event_file_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "daqx/apps/text.hpp"

namespace daqx::evb {

namespace {

using apps::concatenate;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

// mkdir -p: every missing component, tolerating one created concurrently.
void create_directories(const std::string& directory) {
  struct stat info {};
  if (::stat(directory.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode)) throw_file_error("cannot use event file directory", directory, ENOTDIR);
    return;
  }
  std::size_t position = 0;
  while (position != std::string::npos) {
    position = directory.find('/', position + 1);
    const std::string prefix = directory.substr(0, position);
    if (prefix.empty() || prefix.back() == '/') continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      throw_file_error("cannot create directory", prefix, errno);
  }
  if (::stat(directory.c_str(), &info) != 0) throw_file_error("cannot create directory", directory, errno);
  if (!S_ISDIR(info.st_mode)) throw_file_error("cannot use event file directory", directory, ENOTDIR);
}

std::size_t iov_limit() noexcept {
  const long limit = ::sysconf(_SC_IOV_MAX);
  return limit > 0 ? static_cast<std::size_t>(limit) : std::size_t{_XOPEN_IOV_MAX};
}

// Zeros the padding iovecs point at.
constexpr std::byte kZeros[kFragmentAlignment] = {};

}  // namespace

void check_output_directory(const std::string& given) {
  const std::string directory = given.empty() ? std::string(".") : given;  // as FileWriter reads it
  create_directories(directory);
  std::string probe = directory;
  if (probe.back() != '/') probe += '/';
  // A unique name (mkostemp): BUs sharing the directory, even from hosts whose pids coincide, never collide.
  probe.append(".daqx-write-probe-XXXXXX");
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) throw_file_error("cannot write event files in", directory, errno);
  ::close(fd);
  if (::unlink(probe.c_str()) != 0)
    throw_file_error("cannot remove a file from event file directory", directory, errno);
}

// ---- FileWriter -------------------------------------------------------------------------------------------

struct FileWriter::Impl {
  int fd = -1;
  std::string open_path;   // NAME.open, being written
  std::string final_path;  // NAME, after close
  bool damaged = false;    // a failed write could not be cut back to the last whole record
  std::uint32_t next_sequence = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t file_events = 0;
  std::uint64_t first_event = 0;
  std::uint64_t last_event = 0;

  // Reused for every event, so a write allocates only while they grow to the largest event seen.
  std::vector<std::byte> record_head;  // record header and fragment table
  std::vector<iovec> iov;
  std::size_t iov_max = iov_limit();

  // Pacing: a token bucket kept as the time the bytes written so far are allowed to have taken.
  bool pacing_started = false;
  std::chrono::steady_clock::time_point paced_until{};
};

FileWriter::FileWriter(FileOutputConfig config, std::uint32_t run, std::uint32_t builder, std::uint64_t run_number)
    : config_(std::move(config)), run_(run), builder_(builder), run_number_(run_number), impl_(std::make_unique<Impl>()) {
  if (config_.directory.empty()) config_.directory.push_back('.');  // the working directory
}

FileWriter::~FileWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // Nowhere to report from a destructor: the file stays NAME.open, which says it was not closed cleanly.
  }
}

namespace {

// Writes every byte the iovecs describe, IOV_MAX at a time, resuming after partial writes and signals.
// Returns 0 or the errno of the failure. Consumes (modifies) the iovecs.
int write_fully(int fd, iovec* iov, std::size_t count, std::size_t iov_max) noexcept {
  while (count > 0) {
    const int batch = static_cast<int>(std::min(count, iov_max));
    const ssize_t written = ::writev(fd, iov, batch);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (written == 0) return EIO;  // a regular file that accepts nothing would loop forever
    auto done = static_cast<std::size_t>(written);
    while (count > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      ++iov;
      --count;
    }
    if (done > 0) {
      iov->iov_base = static_cast<std::byte*>(iov->iov_base) + done;
      iov->iov_len -= done;
    }
  }
  return 0;
}

}  // namespace

void FileWriter::write(const EventRecordView& event) {
  // Checked before anything is written, so a bad view never leaves half a record behind.
  if (event.run != run_) {
    throw std::runtime_error(concatenate({"event ", std::to_string(event.event), " of run ", std::to_string(event.run),
                                          " given to the file writer of run ", std::to_string(run_)}));
  }
  const std::uint64_t record_bytes = event_record_bytes(event);

  if (impl_->fd < 0) open_next();
  Impl& impl = *impl_;

  auto& head = impl.record_head;
  head.resize(event_record_head_bytes(event.fragments.size()));
  encode_event_record_head(event, record_bytes, head.data());

  // The iovecs point at the caller's pieces: no copy of the payload. One writev per event (IOV_MAX pieces
  // at a time), because the pieces are the caller's only until this call returns.
  auto& iov = impl.iov;
  iov.clear();
  iov.push_back({head.data(), head.size()});
  for (const auto& fragment : event.fragments) {
    for (const auto& piece : fragment.pieces) {
      if (piece.empty()) continue;
      iov.push_back({const_cast<std::byte*>(piece.data()), piece.size()});
    }
    if (const auto padding = padding_of(fragment.size); padding > 0) {
      iov.push_back({const_cast<std::byte*>(kZeros), padding});
    }
  }

  pace(record_bytes);
  if (const int error = write_fully(impl.fd, iov.data(), iov.size(), impl.iov_max); error != 0) {
    // Cut the file back to its last whole record, so closing it still gives a well-formed file.
    if (::ftruncate(impl.fd, static_cast<off_t>(impl.file_bytes)) != 0 ||
        ::lseek(impl.fd, static_cast<off_t>(impl.file_bytes), SEEK_SET) < 0) {
      impl.damaged = true;
    }
    throw_file_error(concatenate({"cannot write event ", std::to_string(event.event), " to"}), impl.open_path, error);
  }

  impl.file_bytes += record_bytes;
  if (impl.file_events == 0) impl.first_event = event.event;
  impl.last_event = event.event;
  ++impl.file_events;
  ++stats_.events;
  stats_.bytes += record_bytes;
  if (impl.file_bytes >= config_.max_file_bytes) close();
}

void FileWriter::open_next() {
  Impl& impl = *impl_;
  create_directories(config_.directory);
  std::string base = config_.directory;
  if (base.back() != '/') base += '/';
  // A name already taken (an earlier attempt at this run, a crashed writer's NAME.open) is skipped, never
  // overwritten.
  for (;; ++impl.next_sequence) {
    std::string final_path = base;
    final_path.append(event_file_name(run_, builder_, impl.next_sequence));
    std::string open_path = final_path;
    open_path.append(".open");
    struct stat info {};
    if (::stat(final_path.c_str(), &info) == 0) continue;
    const int fd = ::open(open_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw_file_error("cannot create event file", open_path, errno);
    }
    impl.fd = fd;
    impl.open_path = std::move(open_path);
    impl.final_path = std::move(final_path);
    break;
  }
  impl.damaged = false;
  impl.file_bytes = 0;
  impl.file_events = 0;
  impl.first_event = impl.last_event = 0;
  stats_.current_file = impl.open_path;

  std::byte header[kFileHeaderBytes] = {};
  std::memcpy(header, kEventFileMagic, sizeof kEventFileMagic);
  put32(&header[8], kEventFileVersion);
  put32(&header[12], kFileHeaderBytes);
  put32(&header[16], run_);
  put32(&header[20], builder_);
  put64(&header[24], now_ns());
  put32(&header[32], impl.next_sequence);
  put64(&header[40], run_number_);
  ++impl.next_sequence;
  iovec iov{header, sizeof header};
  pace(sizeof header);
  if (const int error = write_fully(impl.fd, &iov, 1, impl.iov_max); error != 0) {
    ::close(impl.fd);
    impl.fd = -1;
    ::unlink(impl.open_path.c_str());
    stats_.current_file.clear();
    throw_file_error("cannot write the header of", impl.open_path, error);
  }
  impl.file_bytes = sizeof header;
  stats_.bytes += sizeof header;
}

void FileWriter::close() {
  Impl& impl = *impl_;
  if (impl.fd < 0) return;
  const int fd = std::exchange(impl.fd, -1);
  stats_.current_file.clear();
  if (impl.damaged) {
    // The write that failed was reported; the file keeps its .open name: not closed cleanly.
    ::close(fd);
    return;
  }
  std::byte trailer[kTrailerRecordBytes] = {};
  put32(&trailer[0], kTrailerRecordMagic);
  put32(&trailer[4], kTrailerRecordBytes);
  put64(&trailer[8], impl.file_events);
  put64(&trailer[16], impl.file_bytes + kTrailerRecordBytes);
  put64(&trailer[24], impl.first_event);
  put64(&trailer[32], impl.last_event);
  put64(&trailer[40], now_ns());
  // Removed under the writer (its name unlinked): writes still succeed into the nameless file, so only here
  // can the loss be told; checked before the trailer, and by the rename for a removal after this check.
  const auto removed = [&] {
    return std::runtime_error(concatenate({"event file ", impl.open_path, " was removed while being written: its ",
                                           std::to_string(impl.file_events), " events are lost"}));
  };
  if (struct stat info {}; ::fstat(fd, &info) == 0 && info.st_nlink == 0) {
    ::close(fd);
    throw removed();
  }
  iovec iov{trailer, sizeof trailer};
  pace(sizeof trailer);
  if (const int error = write_fully(fd, &iov, 1, impl.iov_max); error != 0) {
    ::close(fd);
    throw_file_error("cannot write the trailer of", impl.open_path, error);
  }
  stats_.bytes += sizeof trailer;
  // On disk before it has its final name: a file under that name is complete even after a power cut.
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    throw_file_error("cannot flush", impl.open_path, error);
  }
  if (::close(fd) != 0) throw_file_error("cannot close", impl.open_path, errno);
  if (::rename(impl.open_path.c_str(), impl.final_path.c_str()) != 0) {
    if (errno == ENOENT) throw removed();
    throw_file_error(concatenate({"cannot rename ", impl.open_path, " to"}), impl.final_path, errno);
  }
  ++stats_.files_closed;
}

// Sleeps so that the bytes written stay below max_bytes_per_second on average. Idle time earns at most a
// short burst, so a writer that was idle cannot then flood slow storage.
void FileWriter::pace(std::uint64_t bytes) {
  if (config_.max_bytes_per_second <= 0) return;
  using Clock = std::chrono::steady_clock;
  constexpr auto kBurst = std::chrono::milliseconds(50);
  Impl& impl = *impl_;
  const auto now = Clock::now();
  if (!impl.pacing_started || impl.paced_until < now - kBurst) {
    impl.paced_until = impl.pacing_started ? now - kBurst : now;
    impl.pacing_started = true;
  }
  if (impl.paced_until > now) std::this_thread::sleep_until(impl.paced_until);
  impl.paced_until += std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(bytes) / config_.max_bytes_per_second));
}


}  // namespace daqx::evb
