// Named objects shared between the applications of one executive, for in-process hand-over that is not a
// frame: e.g. a downstream application offers the event builder's BU a consumer of built events. Services live
// in the executive library, so applications in different modules find each other's.
#pragma once

#include <memory>
#include <string>

namespace daqx {

// Publishes service under name, replacing what was there. Thread-safe.
void publish_service(const std::string& name, std::shared_ptr<void> service);
// Removes name if it still holds service (a later publisher's service is left alone).
void withdraw_service(const std::string& name, const void* service) noexcept;
// The service published under name, or null. The caller knows its type from the name's contract.
std::shared_ptr<void> find_service(const std::string& name);

}  // namespace daqx
