// ptibv's thin layer over libibverbs and librdmacm: finding the device, registering pool chunks, naming
// errors. Nothing here knows about frames or connections.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>

#include "daqx/pt/counting_registrar.hpp"

namespace daqx::ptibv {

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

// Registers pool chunks with a protection domain (ibv_reg_mr), keeping each chunk's ibv_mr in the key's
// handle and its lkey in the key's key.
std::unique_ptr<pt::CountingRegistrar> make_registrar(ibv_pd* pd);

}  // namespace daqx::ptibv
