// ptibv's device discovery and memory registration.
#include "verbs.hpp"

#include "daqx/pt/socket_address.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace daqx::ptibv {

using pt::address_text;
using pt::errno_text;

DeviceList::DeviceList() { devices_ = rdma_get_devices(&count_); }

DeviceList::~DeviceList() {
  if (devices_ != nullptr) rdma_free_devices(devices_);
}

ibv_context* DeviceList::by_name(const std::string& name) const noexcept {
  for (int i = 0; i < count_; ++i)
    if (name == ibv_get_device_name(devices_[i]->device)) return devices_[i];
  return nullptr;
}

std::string DeviceList::names() const {
  std::string list;
  for (int i = 0; i < count_; ++i) list.append(i == 0 ? "" : ", ").append(ibv_get_device_name(devices_[i]->device));
  return list.empty() ? std::string("none") : list;
}

ibv_context* device_of_address(const sockaddr* address, std::string& error) {
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr) {
    error = "rdma_create_event_channel: " + errno_text(errno) + " (is the rdma_ucm kernel module loaded?)";
    return nullptr;
  }
  rdma_cm_id* id = nullptr;
  ibv_context* device = nullptr;
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    error = "rdma_create_id: " + errno_text(errno);
  } else {
    sockaddr_storage any{};
    std::memcpy(&any, address, address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
    // Port 0: we only ask which device the address is on; the real endpoint binds its own port.
    if (any.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&any)->sin_port = 0;
    if (any.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&any)->sin6_port = 0;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&any)) != 0)
      error = "rdma_bind_addr(" + address_text(address) + "): " + errno_text(errno);
    else if (id->verbs == nullptr)
      error = "address " + address_text(address) + " belongs to no RDMA device";
    else
      device = id->verbs;
    rdma_destroy_id(id);
  }
  rdma_destroy_event_channel(channel);
  return device;
}

std::string device_name(const ibv_context* context) {
  return context != nullptr ? std::string(ibv_get_device_name(context->device)) : std::string("?");
}

int device_numa_node(const ibv_context* context) {
  if (context == nullptr) return -1;
  std::ifstream in(std::string("/sys/class/infiniband/") + ibv_get_device_name(context->device) + "/device/numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  return node;
}

std::unique_ptr<pt::CountingRegistrar> make_registrar(ibv_pd* pd) {
  return std::make_unique<pt::CountingRegistrar>(
      "ptibv",
      [pd](std::byte* base, std::size_t bytes, mem::RegistrationKey& key) -> std::string {
        ibv_mr* mr = ibv_reg_mr(pd, base, bytes, IBV_ACCESS_LOCAL_WRITE);
        if (mr == nullptr) {
          int error = errno;
          std::string reason = "ibv_reg_mr of " + std::to_string(bytes) + " bytes: " + errno_text(error);
          if (error == ENOMEM || error == EPERM || error == EFAULT)
            reason += " (locked memory limit too low? check `ulimit -l`: RDMA needs it unlimited or above the pools' size)";
          return reason;
        }
        key.handle = mr;
        key.descriptor = nullptr;
        key.key = mr->lkey;
        return {};
      },
      [](const mem::RegistrationKey& key) { ibv_dereg_mr(static_cast<ibv_mr*>(key.handle)); });
}

}  // namespace daqx::ptibv
