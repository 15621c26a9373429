// Provider choice with a diagnosis, and memory registration for ptofi.
#include "fabric.hpp"

#include <rdma/fi_errno.h>

#include <atomic>
#include <cstring>
#include <set>
#include <stdexcept>

namespace daqx::ptofi {
namespace {

// The memory-registration modes ptofi implements: it passes each block's descriptor with every send and
// receive (FI_MR_LOCAL), registers whole chunks it allocated itself (FI_MR_ALLOCATED) at their virtual
// addresses (FI_MR_VIRT_ADDR), and takes the provider's keys (FI_MR_PROV_KEY). It does not bind regions
// to endpoints (FI_MR_ENDPOINT) or handle raw keys (FI_MR_RAW); a provider that needs those is refused.
constexpr int kSupportedMrModes = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
// Every operation carries a struct fi_context2 at the front of its context (ops.hpp).
constexpr std::uint64_t kSupportedModes = FI_CONTEXT | FI_CONTEXT2;

std::string mr_mode_text(int mode) {
  static const std::pair<int, const char*> names[] = {
      {FI_MR_LOCAL, "FI_MR_LOCAL"},         {FI_MR_RAW, "FI_MR_RAW"},
      {FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"}, {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},
      {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"},   {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
      {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"}, {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"},
      {FI_MR_HMEM, "FI_MR_HMEM"},           {FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"}};
  std::string text;
  for (const auto& [bit, name] : names)
    if ((mode & bit) != 0) {
      if (!text.empty()) text.append(" | ");
      text.append(name);
    }
  return text.empty() ? std::string("none") : text;
}

// fi_getinfo, owning the result; nullptr with the error code when nothing matches.
InfoPtr get_info(const fi_info* hints, const char* node, const char* service, std::uint64_t flags, int& error) {
  fi_info* found = nullptr;
  error = fi_getinfo(kFabricVersion, node, service, flags, hints, &found);
  if (error != 0) {
    if (found != nullptr) fi_freeinfo(found);
    return nullptr;
  }
  return InfoPtr(found);
}

InfoPtr provider_only_hints(const std::string& provider) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw std::runtime_error("fi_allocinfo: out of memory");
  hints->fabric_attr->prov_name = strdup(provider.c_str());
  hints->mode = ~0ull;  // accept any mode: this query only asks what the provider has
  hints->domain_attr->mr_mode = ~0 & ~(FI_MR_BASIC | FI_MR_SCALABLE);
  return hints;
}

std::string providers_here() {
  int error = 0;
  InfoPtr all = get_info(nullptr, nullptr, nullptr, 0, error);
  std::set<std::string> names;
  for (const fi_info* i = all.get(); i != nullptr; i = i->next)
    if (i->fabric_attr != nullptr && i->fabric_attr->prov_name != nullptr) names.insert(i->fabric_attr->prov_name);
  std::string text;
  for (const auto& name : names) {
    if (!text.empty()) text.append(", ");
    text.append(name);
  }
  return text.empty() ? std::string("none") : text;
}

// Adds ptofi's requirements to hints one at a time and names the first one the provider cannot meet.
std::string diagnose(const std::string& provider) {
  InfoPtr hints = provider_only_hints(provider);
  int error = 0;
  std::string who = "libfabric provider '" + provider + "'";
  if (!get_info(hints.get(), nullptr, nullptr, 0, error))
    return "libfabric has no provider '" + provider + "' on this machine (" + fabric_error(error) +
           "; providers found: " + providers_here() + ")";
  hints->ep_attr->type = FI_EP_MSG;
  if (!get_info(hints.get(), nullptr, nullptr, 0, error))
    return who + " offers no reliable connected endpoints (FI_EP_MSG)";
  hints->caps = FI_MSG;
  if (!get_info(hints.get(), nullptr, nullptr, 0, error))
    return who + " offers no send/receive messages (FI_MSG) on FI_EP_MSG endpoints";
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  if (!get_info(hints.get(), nullptr, nullptr, 0, error))
    return who + " does not keep messages in order (FI_ORDER_SAS), which frames cut into several messages need";
  hints->domain_attr->threading = FI_THREAD_SAFE;
  InfoPtr found = get_info(hints.get(), nullptr, nullptr, 0, error);
  if (!found) return who + " offers no thread-safe domains (FI_THREAD_SAFE)";
  hints->mode = kSupportedModes;
  if (!get_info(hints.get(), nullptr, nullptr, 0, error))
    return who + " requires operating modes ptofi does not provide (it asks for mode 0x" +
           [&] {
             char text[32];
             std::snprintf(text, sizeof text, "%llx", static_cast<unsigned long long>(found->mode));
             return std::string(text);
           }() +
           "; ptofi provides FI_CONTEXT and FI_CONTEXT2)";
  hints->domain_attr->mr_mode = kSupportedMrModes;
  found = get_info(hints.get(), nullptr, nullptr, 0, error);
  if (!found) {
    InfoPtr any = provider_only_hints(provider);
    any->ep_attr->type = FI_EP_MSG;
    any->caps = FI_MSG;
    InfoPtr wants = get_info(any.get(), nullptr, nullptr, 0, error);
    return who + " requires a memory-registration mode ptofi does not implement (it asks for " +
           (wants ? mr_mode_text(wants->domain_attr->mr_mode) : std::string("?")) + "; ptofi implements " +
           mr_mode_text(kSupportedMrModes) + ")";
  }
  return "";
}

}  // namespace

std::string fabric_error(int code) { return std::string(fi_strerror(code < 0 ? -code : code)); }

InfoPtr make_hints(const std::string& provider) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw std::runtime_error("fi_allocinfo: out of memory");
  hints->fabric_attr->prov_name = strdup(provider.c_str());
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG;
  hints->mode = kSupportedModes;
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->domain_attr->mr_mode = kSupportedMrModes;
  return hints;
}

InfoPtr find_provider(const std::string& provider, const char* node, const char* service, std::uint64_t flags) {
  InfoPtr hints = make_hints(provider);
  int error = 0;
  InfoPtr found = get_info(hints.get(), node, service, flags, error);
  if (found) return found;
  std::string missing = diagnose(provider);
  if (!missing.empty()) throw std::runtime_error(missing);
  // The provider has everything, just not for this address (e.g. verbs with an address no RDMA device has).
  std::string where = std::string(node != nullptr ? node : "*") + ":" + (service != nullptr ? service : "*");
  throw std::runtime_error("libfabric provider '" + provider + "' cannot use address " + where + " (" +
                           fabric_error(error) + ")");
}

bool needs_local_registration(const fi_info& info) noexcept {
  return (info.domain_attr->mr_mode & FI_MR_LOCAL) != 0 || (info.mode & FI_LOCAL_MR) != 0;
}

std::unique_ptr<pt::CountingRegistrar> make_registrar(fid_domain* domain) {
  // For providers that want the application to choose keys: one per chunk.
  auto next_key = std::make_shared<std::atomic<std::uint64_t>>(1);
  return std::make_unique<pt::CountingRegistrar>(
      "ptofi",
      [domain, next_key](std::byte* base, std::size_t bytes, mem::RegistrationKey& key) -> std::string {
        fid_mr* region = nullptr;
        int error = fi_mr_reg(domain, base, bytes, FI_SEND | FI_RECV, 0, next_key->fetch_add(1), 0, &region, nullptr);
        if (error != 0) return "fi_mr_reg: " + fabric_error(error);
        key.handle = region;
        key.descriptor = fi_mr_desc(region);
        key.key = fi_mr_key(region);
        return "";
      },
      [](const mem::RegistrationKey& key) { fi_close(&static_cast<fid_mr*>(key.handle)->fid); });
}

}  // namespace daqx::ptofi
