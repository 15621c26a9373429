// Memory registration with a network device, counted once for every transport: a transport says how to
// register and deregister one chunk (ibv_reg_mr, fi_mr_reg); this class times it and keeps the figures its
// report shows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "daqx/mempool/registrar.hpp"

namespace daqx::pt {

// The registration slot of a transport that does not register pools.
inline constexpr std::size_t kNoRegistration = static_cast<std::size_t>(-1);

class CountingRegistrar final : public mem::Registrar {
 public:
  // Registers one chunk, filling key (handle for deregistration, descriptor or local key for posting);
  // returns "" or the reason it failed.
  using Register = std::function<std::string(std::byte* base, std::size_t bytes, mem::RegistrationKey& key)>;
  // Undoes it; key.handle is never null here.
  using Deregister = std::function<void(const mem::RegistrationKey& key)>;

  CountingRegistrar(std::string name, Register register_chunk, Deregister deregister_chunk)
      : name_(std::move(name)), register_(std::move(register_chunk)), deregister_(std::move(deregister_chunk)) {}

  std::string_view name() const override { return name_; }
  std::string register_chunk(std::byte* base, std::size_t bytes, mem::RegistrationKey& key) override;
  void deregister_chunk(std::byte* base, std::size_t bytes, const mem::RegistrationKey& key) noexcept override;

  std::uint64_t registrations() const noexcept { return registrations_.load(std::memory_order_relaxed); }
  std::uint64_t registered_bytes() const noexcept { return registered_bytes_.load(std::memory_order_relaxed); }
  double registration_seconds() const noexcept {
    return static_cast<double>(registration_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

 private:
  std::string name_;
  Register register_;
  Deregister deregister_;
  std::atomic<std::uint64_t> registrations_{0};
  std::atomic<std::uint64_t> registered_bytes_{0};
  std::atomic<std::uint64_t> registration_ns_{0};
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace daqx::pt
