// Timing and counting of memory registrations.
#include "daqx/pt/counting_registrar.hpp"

#include <chrono>

namespace daqx::pt {

std::string CountingRegistrar::register_chunk(std::byte* base, std::size_t bytes, mem::RegistrationKey& key) {
  auto start = std::chrono::steady_clock::now();
  std::string error = register_(base, bytes, key);
  if (!error.empty()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return error;
  }
  auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  registration_ns_.fetch_add(static_cast<std::uint64_t>(took.count()), std::memory_order_relaxed);
  registrations_.fetch_add(1, std::memory_order_relaxed);
  registered_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  return {};
}

void CountingRegistrar::deregister_chunk(std::byte*, std::size_t bytes, const mem::RegistrationKey& key) noexcept {
  if (key.handle == nullptr) return;
  deregister_(key);
  registered_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace daqx::pt
