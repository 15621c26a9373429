// Encoders and decoders of the event builder's messages; the byte layouts are tabled in protocol.hpp.
#include "daqx/evb/protocol.hpp"

#include <limits>

namespace daqx::evb {
namespace {

constexpr std::size_t kRequestFixedBytes = 24;  // run .. total_slots
constexpr std::size_t kSlotBytes = 4;
constexpr std::size_t kDiscardBytes = 24;
constexpr std::size_t kCountBytes = 4;
constexpr std::size_t kAllocateFixedBytes = allocate_bytes(0);  // run, assignment count
constexpr std::size_t kRuStatusBytes = 32;
constexpr std::size_t kControlFixedBytes = 20;  // kind .. text length

constexpr std::size_t kMaxCount = std::numeric_limits<std::uint32_t>::max();

bool known(ControlKind kind) noexcept {
  switch (kind) {
    case ControlKind::heartbeat:
    case ControlKind::reset:
    case ControlKind::bu_down:
    case ControlKind::ru_down:
    case ControlKind::end_of_run:
    case ControlKind::run_failed:
      return true;
  }
  return false;
}

// A count read from the wire is trusted only once the bytes it announces are known to be there, so a
// corrupt or hostile count never drives an allocation.
bool announced_bytes_present(const ByteReader& in, std::uint32_t count, std::size_t element_bytes) noexcept {
  return in.ok() && static_cast<std::uint64_t>(count) * element_bytes <= in.remaining();
}

std::optional<std::size_t> finish(const ByteWriter& out, std::size_t expected) noexcept {
  if (out.overflow() || out.used() != expected) return std::nullopt;
  return out.used();
}

}  // namespace

// ---- Request -------------------------------------------------------------------------------------------

std::size_t request_bytes(const Request& r) noexcept {
  return kRequestFixedBytes + kCountBytes + r.free_slots.size() * kSlotBytes + kCountBytes +
         r.discards.size() * kDiscardBytes;
}

std::optional<std::size_t> encode(const Request& r, std::byte* out, std::size_t room) noexcept {
  if (r.free_slots.size() > kMaxCount || r.discards.size() > kMaxCount) return std::nullopt;
  const std::size_t size = request_bytes(r);
  if (size > room) return std::nullopt;
  ByteWriter w(out, room);
  w.put<std::uint32_t>(r.run);
  w.put<std::uint32_t>(r.generation);
  w.put<std::uint64_t>(r.incarnation);
  w.put<std::uint16_t>(r.priority);
  w.put<std::uint16_t>(r.state);
  w.put<std::uint32_t>(r.total_slots);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(r.free_slots.size()));
  for (std::uint32_t slot : r.free_slots) w.put<std::uint32_t>(slot);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(r.discards.size()));
  for (const Discard& d : r.discards) {
    w.put<std::uint64_t>(d.first_event);
    w.put<std::uint32_t>(d.count);
    w.put<std::uint32_t>(d.slot);
    w.put<std::uint32_t>(d.incomplete);
    w.put<std::uint32_t>(d.corrupt);
  }
  return finish(w, size);
}

std::optional<Request> decode_request(const std::byte* in, std::size_t size) {
  ByteReader reader(in, size);
  Request r;
  r.run = reader.get<std::uint32_t>();
  r.generation = reader.get<std::uint32_t>();
  r.incarnation = reader.get<std::uint64_t>();
  r.priority = reader.get<std::uint16_t>();
  r.state = reader.get<std::uint16_t>();
  r.total_slots = reader.get<std::uint32_t>();
  const auto slot_count = reader.get<std::uint32_t>();
  if (!announced_bytes_present(reader, slot_count, kSlotBytes)) return std::nullopt;
  r.free_slots.reserve(slot_count);
  for (std::uint32_t i = 0; i < slot_count; ++i) r.free_slots.push_back(reader.get<std::uint32_t>());
  const auto discard_count = reader.get<std::uint32_t>();
  if (!announced_bytes_present(reader, discard_count, kDiscardBytes)) return std::nullopt;
  r.discards.reserve(discard_count);
  for (std::uint32_t i = 0; i < discard_count; ++i) {
    Discard d;
    d.first_event = reader.get<std::uint64_t>();
    d.count = reader.get<std::uint32_t>();
    d.slot = reader.get<std::uint32_t>();
    d.incomplete = reader.get<std::uint32_t>();
    d.corrupt = reader.get<std::uint32_t>();
    r.discards.push_back(d);
  }
  if (!reader.ok() || reader.remaining() != 0) return std::nullopt;
  return r;
}

// ---- Allocate ------------------------------------------------------------------------------------------

std::size_t assignments_that_fit(std::size_t room) noexcept {
  if (room < kAllocateFixedBytes) return 0;
  const std::size_t fit = (room - kAllocateFixedBytes) / kAssignmentBytes;
  return fit < kMaxCount ? fit : kMaxCount;
}

std::optional<std::size_t> encode(const Allocate& a, std::byte* out, std::size_t room) noexcept {
  return encode_allocate(a.run, a.assignments, out, room);
}

std::optional<std::size_t> encode_allocate(std::uint32_t run, std::span<const Assignment> assignments, std::byte* out,
                                           std::size_t room) noexcept {
  if (assignments.size() > assignments_that_fit(room)) return std::nullopt;
  const std::size_t size = allocate_bytes(assignments.size());
  ByteWriter w(out, room);
  w.put<std::uint32_t>(run);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(assignments.size()));
  for (const Assignment& x : assignments) {
    w.put<std::uint32_t>(x.bu);
    w.put<std::uint32_t>(x.generation);
    w.put<std::uint32_t>(x.slot);
    w.put<std::uint32_t>(x.count);
    w.put<std::uint64_t>(x.first_event);
  }
  return finish(w, size);
}

std::optional<Allocate> decode_allocate(const std::byte* in, std::size_t size) {
  ByteReader reader(in, size);
  Allocate a;
  a.run = reader.get<std::uint32_t>();
  const auto count = reader.get<std::uint32_t>();
  if (!announced_bytes_present(reader, count, kAssignmentBytes)) return std::nullopt;
  a.assignments.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    Assignment x;
    x.bu = reader.get<std::uint32_t>();
    x.generation = reader.get<std::uint32_t>();
    x.slot = reader.get<std::uint32_t>();
    x.count = reader.get<std::uint32_t>();
    x.first_event = reader.get<std::uint64_t>();
    a.assignments.push_back(x);
  }
  if (!reader.ok() || reader.remaining() != 0) return std::nullopt;
  return a;
}

// ---- RU status -----------------------------------------------------------------------------------------

std::optional<std::size_t> encode(const RuStatus& s, std::byte* out, std::size_t room) noexcept {
  if (room < kRuStatusBytes) return std::nullopt;
  ByteWriter w(out, room);
  w.put<std::uint32_t>(s.run);
  w.put<std::uint32_t>(0);  // reserved: keeps the counters 8-aligned
  w.put<std::uint64_t>(s.incarnation);
  w.put<std::uint64_t>(s.fragments_sent);
  w.put<std::uint64_t>(s.bytes_sent);
  return finish(w, kRuStatusBytes);
}

std::optional<RuStatus> decode_ru_status(const std::byte* in, std::size_t size) {
  ByteReader reader(in, size);
  RuStatus s;
  s.run = reader.get<std::uint32_t>();
  reader.get<std::uint32_t>();  // reserved
  s.incarnation = reader.get<std::uint64_t>();
  s.fragments_sent = reader.get<std::uint64_t>();
  s.bytes_sent = reader.get<std::uint64_t>();
  if (!reader.ok() || reader.remaining() != 0) return std::nullopt;
  return s;
}

// ---- Control -------------------------------------------------------------------------------------------

std::size_t control_bytes(const Control& c) noexcept { return kControlFixedBytes + c.text.size(); }

std::optional<std::size_t> encode(const Control& c, std::byte* out, std::size_t room) noexcept {
  // An unknown kind would be refused by every receiver: better not to send it.
  if (!known(c.kind) || c.text.size() > kMaxCount) return std::nullopt;
  const std::size_t size = control_bytes(c);
  if (size > room) return std::nullopt;
  ByteWriter w(out, room);
  w.put<std::uint16_t>(static_cast<std::uint16_t>(c.kind));
  w.put<std::uint16_t>(0);  // reserved
  w.put<std::uint32_t>(c.run);
  w.put<std::uint32_t>(c.generation);
  w.put<std::uint32_t>(c.subject);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(c.text.size()));
  w.put_bytes(c.text.data(), c.text.size());
  return finish(w, size);
}

std::optional<Control> decode_control(const std::byte* in, std::size_t size) {
  ByteReader reader(in, size);
  Control c;
  c.kind = static_cast<ControlKind>(reader.get<std::uint16_t>());
  reader.get<std::uint16_t>();  // reserved
  c.run = reader.get<std::uint32_t>();
  c.generation = reader.get<std::uint32_t>();
  c.subject = reader.get<std::uint32_t>();
  const auto text_length = reader.get<std::uint32_t>();
  if (!known(c.kind) || !announced_bytes_present(reader, text_length, 1)) return std::nullopt;
  const std::byte* text = reader.take(text_length);
  if (!reader.ok() || reader.remaining() != 0) return std::nullopt;
  if (text_length != 0) c.text.assign(reinterpret_cast<const char*>(text), text_length);
  return c;
}

std::string_view to_string(ControlKind kind) noexcept {
  switch (kind) {
    case ControlKind::heartbeat:
      return "heartbeat";
    case ControlKind::reset:
      return "reset";
    case ControlKind::bu_down:
      return "bu_down";
    case ControlKind::ru_down:
      return "ru_down";
    case ControlKind::end_of_run:
      return "end_of_run";
    case ControlKind::run_failed:
      return "run_failed";
  }
  return "unknown";
}

// ---- Fragment blocks -----------------------------------------------------------------------------------

void encode(const BlockHeader& h, ByteWriter& out) noexcept {
  out.put<std::uint32_t>(h.run);
  out.put<std::uint32_t>(h.generation);
  out.put<std::uint32_t>(h.slot);
  out.put<std::uint32_t>(h.batch_count);
  out.put<std::uint64_t>(h.batch_first_event);
  out.put<std::uint32_t>(h.piece_count);
  out.put<std::uint32_t>(h.flags);
}

BlockHeader decode_block_header(ByteReader& in) noexcept {
  BlockHeader h;
  h.run = in.get<std::uint32_t>();
  h.generation = in.get<std::uint32_t>();
  h.slot = in.get<std::uint32_t>();
  h.batch_count = in.get<std::uint32_t>();
  h.batch_first_event = in.get<std::uint64_t>();
  h.piece_count = in.get<std::uint32_t>();
  h.flags = in.get<std::uint32_t>();
  return h;
}

void encode(const PieceHeader& h, ByteWriter& out) noexcept {
  out.put<std::uint64_t>(h.event);
  out.put<std::uint32_t>(h.superfragment_size);
  out.put<std::uint32_t>(h.offset);
  out.put<std::uint32_t>(h.size);
  out.put<std::uint32_t>(h.reserved);
}

PieceHeader decode_piece_header(ByteReader& in) noexcept {
  PieceHeader h;
  h.event = in.get<std::uint64_t>();
  h.superfragment_size = in.get<std::uint32_t>();
  h.offset = in.get<std::uint32_t>();
  h.size = in.get<std::uint32_t>();
  h.reserved = in.get<std::uint32_t>();
  return h;
}

}  // namespace daqx::evb
