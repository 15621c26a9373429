// The limits of a host, and of a process started there, that bound what a partition may ask of it: open files,
// locked memory, reserved huge pages and the ephemeral port range. Read here, or on another host and carried
// back as text (daqx-executive --host-limits), so that a plan is checked against the host that will run it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace daqx {

struct HostLimits {
  static constexpr std::size_t kUnlimited = static_cast<std::size_t>(-1);
  std::string host;                   // the host's name (gethostname), for messages
  std::size_t open_files = 0;         // hard RLIMIT_NOFILE: an executive raises its soft limit to it
  std::size_t locked_bytes = 0;       // soft RLIMIT_MEMLOCK, or kUnlimited (so is it with CAP_IPC_LOCK)
  std::size_t huge_pages_free = 0;    // HugePages_Free of /proc/meminfo
  std::size_t huge_page_bytes = 0;    // Hugepagesize
  std::uint16_t ephemeral_low = 0;    // /proc/sys/net/ipv4/ip_local_port_range: source ports of outgoing
  std::uint16_t ephemeral_high = 0;   // connections are taken from here (0, 0: not known)
  // /proc/sys/net/ipv4/ip_local_reserved_ports: ranges of that range the system never hands out.
  std::vector<std::pair<std::uint16_t, std::uint16_t>> reserved_ports;

  // This process on this host (its network namespace's port range).
  static HostLimits here();
  // "host=... openFiles=... lockedBytes=... hugePagesFree=... hugePageBytes=... ephemeralPorts=LOW-HIGH
  // [reservedPorts=A-B,C]", one line.
  std::string text() const;
  // The inverse of text(); nullopt (and `error`) when the text is not that.
  static std::optional<HostLimits> parse(std::string_view text, std::string& error);
  // Whether the system may give `port` to an outgoing connection as its source: inside the range, not reserved.
  bool ephemeral(std::uint16_t port) const noexcept;

 private:
  std::string reserved_text() const;  // " reservedPorts=...", or empty
};

}  // namespace daqx
