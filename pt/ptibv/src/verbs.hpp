// ptibv's thin layer over libibverbs and librdmacm: finding the device, registering pool chunks, naming
// errors. Nothing here knows about frames or connections.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "daqx/mempool/registrar.hpp"

namespace daqx::ptibv {

// host:port of a socket address, "?" when there is none.
std::string address_text(const sockaddr* address);
// getaddrinfo for a numeric or named host; throws std::runtime_error naming the host.
sockaddr_storage resolve_host(const std::string& host, std::uint16_t port);

// The RDMA devices librdmacm has opened (so that an rdma_cm_id's verbs pointer is one of them).
class DeviceList {
 public:
  DeviceList();
  ~DeviceList();
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  int size() const noexcept { return count_; }
  ibv_context* at(int i) const noexcept { return devices_[i]; }
  ibv_context* by_name(const std::string& name) const noexcept;
  std::string names() const;  // "rxe0, mlx5_0" or "none"

 private:
  ibv_context** devices_ = nullptr;
  int count_ = 0;
};

// The device an IP address of this host belongs to (rdma_bind_addr on a throw-away id); nullptr with the
// reason in error when it belongs to none.
ibv_context* device_of_address(const sockaddr* address, std::string& error);

// /sys/class/infiniband/<device>/device/numa_node, -1 when the kernel does not say.
int device_numa_node(const ibv_context* context);

std::string device_name(const ibv_context* context);
std::string errno_text(int error);

// Registers pool chunks with a protection domain (ibv_reg_mr), keeping each chunk's ibv_mr in the key's
// handle and its lkey in the key's key; counts what it did.
class MemoryRegistrar final : public mem::Registrar {
 public:
  explicit MemoryRegistrar(ibv_pd* pd) : pd_(pd) {}
  std::string_view name() const override { return "ptibv"; }
  std::string register_chunk(std::byte* base, std::size_t bytes, mem::RegistrationKey& key) override;
  void deregister_chunk(std::byte* base, std::size_t bytes, const mem::RegistrationKey& key) noexcept override;

  std::uint64_t registrations() const noexcept { return registrations_.load(std::memory_order_relaxed); }
  std::uint64_t registered_bytes() const noexcept { return registered_bytes_.load(std::memory_order_relaxed); }
  double registration_seconds() const noexcept {
    return static_cast<double>(registration_ns_.load(std::memory_order_relaxed)) * 1e-9;
  }
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

 private:
  ibv_pd* pd_;
  std::atomic<std::uint64_t> registrations_{0};
  std::atomic<std::uint64_t> registered_bytes_{0};
  std::atomic<std::uint64_t> registration_ns_{0};
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace daqx::ptibv
