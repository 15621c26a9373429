// Built events handed to a downstream application in the same executive, without copies: a BU configured
// with output "consumer" and consumer NAME calls the consumer published under "evb/consumer/NAME" for every
// event it builds. Header-only, so a downstream module needs no link to the event builder's module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daqx/api/frame.hpp"
#include "daqx/api/named_services.hpp"

namespace daqx::evb {

namespace event_flags {
inline constexpr std::uint32_t incomplete = 0x1;  // built without a contributor that was declared down
inline constexpr std::uint32_t corrupt = 0x2;     // a super-fragment failed the integrity checks
}  // namespace event_flags

// One contributor's super-fragment: where its bytes are in the received blocks (in order).
struct BuiltFragment {
  Tid contributor = kNoTid;  // the EvM (trigger fragment) or an RU
  std::size_t size = 0;
  std::vector<std::span<const std::byte>> pieces;
};

struct BuiltEvent {
  std::uint32_t run = 0;
  std::uint64_t event = 0;  // event id, from 1 in each run
  std::uint32_t flags = 0;  // event_flags
  Tid builder = kNoTid;     // the BU that built it
  std::vector<BuiltFragment> fragments;  // EvM first, then the RUs in the BU's configured order
  // Keeps the received blocks (and the BU's resource slot) alive: drop it when done with the data. The BU
  // offers the slot again only when every event of its batch has been dropped, so holding events is
  // back-pressure on the BU, and through it on the event builder.
  std::shared_ptr<const void> hold;

  std::size_t size() const noexcept {
    std::size_t total = 0;
    for (const auto& f : fragments) total += f.size;
    return total;
  }
};

// Called on the BU's dispatch thread; must not block (queue the event and return).
using EventConsumer = std::function<void(BuiltEvent&&)>;

struct EventConsumerService {
  EventConsumer consume;
};

inline std::string consumer_service_name(const std::string& name) { return "evb/consumer/" + name; }

// For the downstream application: publish at configure, withdraw at halt (with the pointer returned).
inline const void* publish_event_consumer(const std::string& name, EventConsumer consumer) {
  auto service = std::make_shared<EventConsumerService>(EventConsumerService{std::move(consumer)});
  const void* key = service.get();
  publish_service(consumer_service_name(name), std::move(service));
  return key;
}
inline void withdraw_event_consumer(const std::string& name, const void* key) noexcept {
  withdraw_service(consumer_service_name(name), key);
}
// For the BU.
inline std::shared_ptr<EventConsumerService> find_event_consumer(const std::string& name) {
  return std::static_pointer_cast<EventConsumerService>(find_service(consumer_service_name(name)));
}

}  // namespace daqx::evb
