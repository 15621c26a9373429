// Opens the guest's soft-RoCE device and registers memory on it: proves that a program of this build tree
// (in the sanitizer tree, an AddressSanitizer one) runs in the rdma-vm guest and can use verbs there.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "verbs_probe: %s: %s\n", what, std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view wanted = argc > 1 ? argv[1] : "rxe0";
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) return fail("ibv_get_device_list");
  ibv_device* device = nullptr;
  for (int i = 0; i < count; ++i) {
    if (ibv_get_device_name(devices[i]) == wanted) device = devices[i];
  }
  if (device == nullptr) {
    std::fprintf(stderr, "verbs_probe: no device %.*s among %d\n", static_cast<int>(wanted.size()), wanted.data(),
                 count);
    ibv_free_device_list(devices);
    return 1;
  }
  ibv_context* context = ibv_open_device(device);
  ibv_free_device_list(devices);
  if (context == nullptr) return fail("ibv_open_device");

  ibv_port_attr port{};
  if (ibv_query_port(context, 1, &port) != 0) return fail("ibv_query_port");
  if (port.state != IBV_PORT_ACTIVE) {
    std::fprintf(stderr, "verbs_probe: port 1 is %s, not active\n", ibv_port_state_str(port.state));
    return 1;
  }

  ibv_pd* protection_domain = ibv_alloc_pd(context);
  if (protection_domain == nullptr) return fail("ibv_alloc_pd");
  // 64 MiB: well past the default 8 MiB locked-memory limit, so this fails unless the guest lifted it.
  std::vector<char> buffer(64U << 20U);
  ibv_mr* region = ibv_reg_mr(protection_domain, buffer.data(), buffer.size(),
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (region == nullptr) return fail("ibv_reg_mr of 64 MiB");
  std::printf("verbs_probe: %.*s port 1 active, 64 MiB registered (lkey 0x%x)\n", static_cast<int>(wanted.size()),
              wanted.data(), region->lkey);

  ibv_dereg_mr(region);
  ibv_dealloc_pd(protection_domain);
  ibv_close_device(context);
  return 0;
}
