// ptofi's thin layer over libfabric: owners that close what they hold, errors as text, the choice of
// provider with a diagnosis of what a provider lacks, and memory registration through the mempool hook.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstdint>
#include <memory>
#include <string>

#include "daqx/pt/counting_registrar.hpp"

namespace daqx::ptofi {

// The API version of the headers we build with: the library must be at least as new.
inline constexpr std::uint32_t kFabricVersion = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

std::string fabric_error(int code);  // code as libfabric returns it (negative)

struct InfoDeleter {
  void operator()(fi_info* info) const noexcept { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

template <typename T>
struct FidCloser {
  void operator()(T* object) const noexcept {
    if (object != nullptr) fi_close(&object->fid);
  }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser<T>>;

// What ptofi asks of a provider: reliable connected endpoints (FI_EP_MSG) with send/receive (FI_MSG),
// messages kept in order (FI_ORDER_SAS), thread-safe domains, and memory registration only in the modes
// it implements (local descriptors, FI_MR_LOCAL and friends; not FI_MR_ENDPOINT or FI_MR_RAW).
InfoPtr make_hints(const std::string& provider);

// fi_getinfo with make_hints(provider) for a node/service (either may be null). On failure throws
// std::runtime_error naming the first capability the provider lacks, or the address it cannot use.
InfoPtr find_provider(const std::string& provider, const char* node, const char* service, std::uint64_t flags);

// Whether the provider wants local memory registered before it sends from it or receives into it.
bool needs_local_registration(const fi_info& info) noexcept;

// Registers pool chunks with a domain (fi_mr_reg), keeping each chunk's fid_mr and descriptor in the
// chunk's key slot.
std::unique_ptr<pt::CountingRegistrar> make_registrar(fid_domain* domain);

}  // namespace daqx::ptofi
