// ptshm's socket messages with descriptors, and the endpoint's socket address.
#include "wire.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace daqx::ptshm {

sockaddr_un endpoint_socket_address(const std::string& host, std::uint16_t port, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string name("daqx-shm/");
  name.append(host).append(":").append(std::to_string(port));
  if (name.size() > sizeof address.sun_path - 1) name.resize(sizeof address.sun_path - 1);
  // Abstract namespace: the first byte of sun_path is 0, and the name is as long as length says.
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return address;
}

std::string send_message(int socket, const void* message, std::size_t bytes, const int* fds, int fd_count) {
  iovec vector{const_cast<void*>(message), bytes};
  msghdr header{};
  header.msg_iov = &vector;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))]{};
  if (fd_count > 0) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(static_cast<std::size_t>(fd_count) * sizeof(int));
    cmsghdr* rights = CMSG_FIRSTHDR(&header);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(static_cast<std::size_t>(fd_count) * sizeof(int));
    std::memcpy(CMSG_DATA(rights), fds, static_cast<std::size_t>(fd_count) * sizeof(int));
  }
  for (;;) {
    ssize_t sent = sendmsg(socket, &header, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes)) return {};
    if (sent < 0 && errno == EINTR) continue;
    return sent < 0 ? std::string("sendmsg: ") + std::strerror(errno) : std::string("sendmsg: short write");
  }
}

long receive_message(int socket, void* message, std::size_t bytes, int* fds, int max_fds, std::string& error) {
  for (int i = 0; i < max_fds; ++i) fds[i] = -1;
  iovec vector{message, bytes};
  msghdr header{};
  header.msg_iov = &vector;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))]{};
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = recvmsg(socket, &header, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  // Whatever descriptors came are taken now, wanted or not, so none leaks.
  int taken = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (taken < max_fds) {
        fds[taken++] = fd;
      } else {
        close(fd);
      }
    }
  }
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    error = std::string("recvmsg: ") + std::strerror(errno);
    return -2;
  }
  if ((header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    error = "a message longer than any of ptshm's";
    return -2;
  }
  return static_cast<long>(got);
}

bool sealed_against_shrinking(int fd) noexcept {
  const int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_SHRINK) != 0;
}

std::size_t descriptor_size(int fd) noexcept {
  struct stat status {};
  if (fstat(fd, &status) != 0 || status.st_size < 0) return 0;
  return static_cast<std::size_t>(status.st_size);
}

}  // namespace daqx::ptshm
