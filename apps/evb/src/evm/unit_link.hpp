// The EvM's way to one unit (a BU or an RU): its TID and control frames to it through the Outbox; the BU
// and RU proxies each own one.
#pragma once

#include <cstdint>

#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"
#include "common/outbox.hpp"

namespace daqx::evb::evm {

class UnitLink {
 public:
  UnitLink(Tid tid, ApplicationContext& context, Outbox& outbox) : tid_(tid), context_(&context), outbox_(&outbox) {}

  Tid tid() const { return tid_; }
  ApplicationContext& context() const { return *context_; }
  Outbox& outbox() const { return *outbox_; }

  // Queued (in order behind what waits for the unit) or, for a heartbeat and the like, only if nothing waits.
  // False when out of blocks: the frame is not sent (the caller decides whether it must go later).
  bool send_control(std::uint32_t run, const Control& control, bool queue) const {
    mem::Ref frame = control_frame(*context_, control);
    if (!frame) return false;
    if (queue) outbox_->send(tid_, function::control, run, std::move(frame), frame_flags::send_now);
    else outbox_->send_if_idle(tid_, function::control, std::move(frame), frame_flags::send_now);
    return true;
  }

 private:
  Tid tid_;
  ApplicationContext* context_;  // the EvM's; outlives the proxies
  Outbox* outbox_;               // the EvM's
};

}  // namespace daqx::evb::evm
