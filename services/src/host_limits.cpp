// Reading this host's limits, and carrying them as one line of text.
#include "daqx/services/host_limits.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace daqx {
namespace {

constexpr int kCapIpcLock = 14;  // linux/capability.h: locks memory beyond RLIMIT_MEMLOCK

std::size_t size_of(rlim_t value) {
  return value == RLIM_INFINITY ? HostLimits::kUnlimited : static_cast<std::size_t>(value);
}

// A "Name: value" field of a /proc file, or -1.
long long proc_field(const char* path, std::string_view name) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':')
      return std::strtoll(line.c_str() + name.size() + 1, nullptr, 0);
  return -1;
}

bool has_cap_ipc_lock() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0) return ((std::stoull(line.substr(7), nullptr, 16) >> kCapIpcLock) & 1) != 0;
  return false;
}

bool number(std::string_view text, std::size_t& value) {
  if (text == "unlimited") {
    value = HostLimits::kUnlimited;
    return true;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc{} && end == text.data() + text.size();
}

// "8080,9000-9010" (the kernel's list, or ours); false when it is not that.
bool port_ranges(std::string_view text, std::vector<std::pair<std::uint16_t, std::uint16_t>>& ranges) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const std::size_t dash = item.find('-');
    std::size_t low = 0, high = 0;
    if (!number(item.substr(0, dash), low)) return false;
    high = low;
    if (dash != std::string_view::npos && !number(item.substr(dash + 1), high)) return false;
    if (low > high || high > 65535) return false;
    ranges.emplace_back(static_cast<std::uint16_t>(low), static_cast<std::uint16_t>(high));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return true;
}

}  // namespace

bool HostLimits::ephemeral(std::uint16_t port) const noexcept {
  if (ephemeral_high == 0 || port < ephemeral_low || port > ephemeral_high) return false;
  for (const auto& [low, high] : reserved_ports)
    if (port >= low && port <= high) return false;
  return true;
}

HostLimits HostLimits::here() {
  HostLimits limits;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  limits.host = name;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) limits.open_files = size_of(limit.rlim_max);
  if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0) limits.locked_bytes = size_of(limit.rlim_cur);
  if (has_cap_ipc_lock()) limits.locked_bytes = kUnlimited;
  const long long free_pages = proc_field("/proc/meminfo", "HugePages_Free");
  const long long page_kib = proc_field("/proc/meminfo", "Hugepagesize");
  limits.huge_pages_free = free_pages > 0 ? static_cast<std::size_t>(free_pages) : 0;
  limits.huge_page_bytes = page_kib > 0 ? static_cast<std::size_t>(page_kib) * 1024 : 0;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned low = 0, high = 0;
  if (range >> low >> high && low <= high && high <= 65535) {
    limits.ephemeral_low = static_cast<std::uint16_t>(low);
    limits.ephemeral_high = static_cast<std::uint16_t>(high);
  }
  std::ifstream reserved("/proc/sys/net/ipv4/ip_local_reserved_ports");
  std::string list;
  if (std::getline(reserved, list) && !port_ranges(list, limits.reserved_ports)) limits.reserved_ports.clear();
  return limits;
}

std::string HostLimits::reserved_text() const {
  std::string text;
  for (const auto& [low, high] : reserved_ports) {
    text += text.empty() ? " reservedPorts=" : ",";
    text += std::to_string(low);
    if (high != low) {
      text += '-';
      text += std::to_string(high);
    }
  }
  return text;
}

std::string HostLimits::text() const {
  const auto shown = [](std::size_t value) { return value == kUnlimited ? std::string("unlimited") : std::to_string(value); };
  return "host=" + host + " openFiles=" + shown(open_files) + " lockedBytes=" + shown(locked_bytes) +
         " hugePagesFree=" + std::to_string(huge_pages_free) + " hugePageBytes=" + std::to_string(huge_page_bytes) +
         " ephemeralPorts=" + std::to_string(ephemeral_low) + "-" + std::to_string(ephemeral_high) + reserved_text();
}

std::optional<HostLimits> HostLimits::parse(std::string_view text, std::string& error) {
  HostLimits limits;
  unsigned seen = 0;
  std::istringstream words{std::string(text)};
  for (std::string word; words >> word;) {
    const std::size_t equals = word.find('=');
    const std::string name = word.substr(0, equals);
    const std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
    std::size_t parsed = 0;
    bool ok = true;
    if (name == "host") {
      limits.host = value;
    } else if (name == "ephemeralPorts") {
      const std::size_t dash = value.find('-');
      std::size_t low = 0, high = 0;
      ok = dash != std::string::npos && number(value.substr(0, dash), low) && number(value.substr(dash + 1), high) &&
           low <= high && high <= 65535;
      limits.ephemeral_low = static_cast<std::uint16_t>(low);
      limits.ephemeral_high = static_cast<std::uint16_t>(high);
    } else if (name == "reservedPorts") {
      if (!port_ranges(value, limits.reserved_ports)) {
        error = "'" + word + "' is not a list of ports";
        return std::nullopt;
      }
      continue;  // optional
    } else if (!number(value, parsed)) {
      ok = false;
    } else if (name == "openFiles") {
      limits.open_files = parsed;
    } else if (name == "lockedBytes") {
      limits.locked_bytes = parsed;
    } else if (name == "hugePagesFree") {
      limits.huge_pages_free = parsed;
    } else if (name == "hugePageBytes") {
      limits.huge_page_bytes = parsed;
    } else {
      continue;  // a field a newer executive adds
    }
    if (!ok) {
      error = "'" + word + "' is not a limit";
      return std::nullopt;
    }
    ++seen;
  }
  if (seen < 6) {
    error = "expected host=, openFiles=, lockedBytes=, hugePagesFree=, hugePageBytes= and ephemeralPorts=, got '" +
            std::string(text) + "'";
    return std::nullopt;
  }
  return limits;
}

}  // namespace daqx
