// A readout unit's data source: where the super-fragments it sends come from. In a detector this is the read-out
// (the front-end links of the RU's sources); here it is SyntheticSource (readout/synthetic_source.hpp), which
// generates CMS-style fragments that the BUs can check. The FragmentSender (readout/fragment_sender.hpp, pumped
// by the RU's BU proxy and by the EvM) asks the source for each event's super-fragment and streams it straight
// into the blocks it sends, one cursor per BU, so a super-fragment is never copied and may span blocks. The EvM
// is a readout unit too for its trigger fragment, and uses a SyntheticSource of the trigger's shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace daqx::evb::readout {

// One super-fragment being read out: begin(event), then write() into successive windows until remaining() is 0.
class SuperFragmentCursor {
 public:
  virtual ~SuperFragmentCursor() = default;
  // Starts event's super-fragment; returns its size in bytes.
  virtual std::size_t begin(std::uint64_t event) noexcept = 0;
  // Writes up to room bytes of what comes next; returns how many.
  virtual std::size_t write(std::byte* out, std::size_t room) noexcept = 0;
  virtual std::size_t total() const noexcept = 0;
  virtual std::size_t remaining() const noexcept = 0;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The size event's super-fragment will have, before it is read (blocks are sized from it).
  virtual std::size_t size_of(std::uint64_t event) const noexcept = 0;
  // A cursor for reading super-fragments out; the sender keeps one per BU it sends to.
  virtual std::unique_ptr<SuperFragmentCursor> cursor() const = 0;
};

}  // namespace daqx::evb::readout
