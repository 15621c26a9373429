// Memory registration with a network device, counted once for every transport: a transport says how to
// register and deregister one chunk; this class times it and keeps the figures its report shows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "daqx/mempool/registrar.hpp"

namespace daqx::pt {

// The registration slot of a transport that does not register pools.
inline constexpr std::size_t kNoRegistration = static_cast<std::size_t>(-1);

class CountingRegistrar : public mem::Registrar {
 public:
  std::string register_chunk(std::byte* base, std::size_t bytes, mem::RegistrationKey& key) final;
  void deregister_chunk(std::byte* base, std::size_t bytes, const mem::RegistrationKey& key) noexcept final;

  std::uint64_t registrations() const noexcept { return registrations_.load(std::memory_order_relaxed); }
  std::uint64_t registered_bytes() const noexcept { return registered_bytes_.load(std::memory_order_relaxed); }
  double registration_seconds() const noexcept {
    return static_cast<double>(registration_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

 protected:
  // Registers one chunk, filling key (handle for deregistration, descriptor or local key for posting);
  // returns "" or the reason it failed.
  virtual std::string register_with_device(std::byte* base, std::size_t bytes, mem::RegistrationKey& key) = 0;
  // Undoes it; key.handle is never null here.
  virtual void deregister_from_device(const mem::RegistrationKey& key) noexcept = 0;

 private:
  std::atomic<std::uint64_t> registrations_{0};
  std::atomic<std::uint64_t> registered_bytes_{0};
  std::atomic<std::uint64_t> registration_ns_{0};
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace daqx::pt
