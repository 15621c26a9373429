// How a publisher's streams reach subscribers outside the partition's applications (the control port's streaming
// answer): each publisher registers a StreamDirectory as the named service directory_service_name(tid); the
// control port finds it there and attaches an ExternalSink to a stream. The publisher applies the sink's policy
// on its dispatch thread exactly as for an application subscriber, then push()es what it sends; the control port
// writes the records to its client on a thread of its own and never blocks the publisher.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqx/api/frame.hpp"
#include "daqx/mempool/ref.hpp"
#include "daqx/streams/policy.hpp"

namespace daqx::streams {

// One event on its way out: the publisher's shared Ref of its bytes, and its place in the subscription.
struct StreamRecord {
  std::uint64_t sequence = 0;  // 1, 2, ... of this subscription (a gap is never made: drops are counted instead)
  std::uint64_t key = 0;       // the publisher's key (e.g. the event id)
  std::uint64_t dropped = 0;   // events this subscription's policy dropped before this one, in all
  mem::Ref bytes;              // shared with other subscribers: never change it
};

// Implemented by the control port. push() and close() are called on the publisher's dispatch thread and must not
// block; the sink acknowledges what it wrote (acknowledge() on the subscription) so that at most `depth` records
// are held between the publisher and the client.
class ExternalSink {
 public:
  virtual ~ExternalSink() = default;
  // A record the policy let through; it counts against the subscription's depth until acknowledged.
  virtual void push(StreamRecord record) = 0;
  // The stream ended (the publisher halted or is gone) or the subscription was refused later: the reason.
  virtual void close(const std::string& reason) = 0;
};

// The publisher's side of an external subscription: the control port keeps it while its client is connected.
class ExternalSubscription {
 public:
  virtual ~ExternalSubscription() = default;
  // Thread-safe: records up to `sequence` were written to the client; the publisher may send more.
  virtual void acknowledge(std::uint64_t sequence) noexcept = 0;
  // Thread-safe: the client went away; the publisher forgets the subscription (counted as disconnected).
  virtual void cancel() noexcept = 0;
};

struct StreamDescription {
  std::string name;
  std::uint64_t published = 0;  // events offered to the stream
  std::uint32_t subscribers = 0;
};

// Registered by each publisher under directory_service_name(tid). Thread-safe.
class StreamDirectory {
 public:
  virtual ~StreamDirectory() = default;
  virtual std::vector<StreamDescription> streams() const = 0;
  // Attaches sink to stream with policy; "" and the subscription, or the reason it is refused (unknown stream,
  // too many subscribers, publisher not running) and null.
  enum class Refusal {
    none,
    bad_policy,      // the policy is out of range
    unknown_stream,  // the publisher offers no stream of that name
    not_offering,    // the publisher offers no stream now (halted), or is gone
    full,            // the stream has as many subscribers as it takes
  };
  struct Attached {
    std::shared_ptr<ExternalSubscription> subscription;
    std::string error;  // one printable line
    Refusal refusal = Refusal::none;
  };
  virtual Attached attach(const std::string& stream, const Policy& policy, std::shared_ptr<ExternalSink> sink) = 0;
};

inline std::string directory_service_name(Tid publisher) { return "daqx/streams/" + std::to_string(publisher); }

}  // namespace daqx::streams
