// The process-wide service table: a mutex-guarded map, used at configure time, never on the data path.
#include "daqx/api/named_services.hpp"

#include <map>
#include <mutex>

namespace daqx {
namespace {

struct ServiceTable {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<void>, std::less<>> services;
};

ServiceTable& table() {
  static ServiceTable instance;
  return instance;
}

}  // namespace

void publish_service(const std::string& name, std::shared_ptr<void> service) {
  ServiceTable& t = table();
  std::lock_guard lock(t.mutex);
  t.services[name] = std::move(service);
}

void withdraw_service(const std::string& name, const void* service) noexcept {
  ServiceTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.services.find(name);
  if (it != t.services.end() && it->second.get() == service) t.services.erase(it);
}

std::shared_ptr<void> find_service(const std::string& name) {
  ServiceTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.services.find(name);
  return it == t.services.end() ? nullptr : it->second;
}

}  // namespace daqx
