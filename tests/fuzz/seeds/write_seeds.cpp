// Writes the binary seeds of the fuzz targets (tests/fuzz/corpus/<target>/seed-*) with daqx's own encoders and
// event-file writer, so each target starts from valid messages, streams and files and mutates from there.
// Run by hand when a format changes: `scripts/dev.sh fuzz --write-seeds`. The checked-in corpus also holds
// regression inputs (crash-*, named for what they found), which this never touches.
#include <array>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "daqx/api/frame.hpp"
#include "daqx/api/multipart.hpp"
#include "daqx/evb/protocol.hpp"
#include "daqx/pt/credit_flow.hpp"
#include "files/event_file_writer.hpp"
#include "wire.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

namespace {

fs::path corpus;

void write(const std::string& target, const std::string& name, const Bytes& bytes) {
  const fs::path directory = corpus / target;
  fs::create_directories(directory);
  std::ofstream(directory / ("seed-" + name), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// FuzzedDataProvider takes its integers from the end of the input: `tail` bytes that select what a target does.
Bytes with_tail(Bytes bytes, std::initializer_list<std::uint8_t> tail) {
  for (auto it = tail.end(); it != tail.begin();) bytes.push_back(std::byte{*--it});
  return bytes;
}

Bytes frame(std::uint32_t total, std::uint16_t function) {
  daqx::FrameHeader header;
  header.total_length = total;
  header.target = 2;
  header.initiator = 1;
  header.function = function;
  Bytes bytes(total);
  daqx::encode_header(header, bytes.data());
  for (std::size_t i = daqx::kFrameHeaderSize; i < total; ++i) bytes[i] = std::byte(static_cast<std::uint8_t>(i));
  return bytes;
}

Bytes frames(std::initializer_list<std::uint32_t> sizes) {
  Bytes stream;
  for (std::uint32_t size : sizes) {
    const Bytes one = frame(size, 7);
    stream.insert(stream.end(), one.begin(), one.end());
  }
  return stream;
}

template <typename Message>
Bytes encoded(const Message& message) {
  Bytes bytes(1 << 16);
  bytes.resize(*daqx::evb::encode(message, bytes.data(), bytes.size()));
  return bytes;
}

void frame_header() {
  write("frame_header", "exact", with_tail(frame(64, 1), {0xff, 0xff, 0xff, 1}));
  write("frame_header", "header-only", with_tail(frame(32, 1), {0xff, 0xff, 0xff, 0}));
}

// A multipart payload (part table and parts) of the given part lengths, each part's bytes its index.
Bytes multipart_payload(std::initializer_list<std::uint32_t> lengths) {
  Bytes bytes(daqx::part_table_size(lengths.size()));
  daqx::detail::store_le<std::uint32_t>(bytes.data() + daqx::part_table_offset::count,
                                        static_cast<std::uint32_t>(lengths.size()));
  std::size_t i = 0;
  for (std::uint32_t length : lengths) {
    daqx::detail::store_le<std::uint32_t>(bytes.data() + daqx::part_table_offset::lengths + 4 * i, length);
    bytes.insert(bytes.end(), length, std::byte(static_cast<std::uint8_t>(i)));
    ++i;
  }
  return bytes;
}

void multipart() {
  // Tail, in the order consumed: views, shared (0: yes), multipart flag (0: no), cuts (a count, 2 bytes each),
  // then 1 for a table made to add up (a count - 1, 2 bytes per length, the parts' bytes from the front) or 0
  // for the payload as it is.
  write("multipart", "table-made", with_tail(Bytes(431, std::byte{0x5a}),
                                             {64, 1, 1, 2, 0, 50, 1, 0x2c, 1, 4, 0, 24, 0, 100, 0, 0, 1, 0x2c, 0, 7}));
  write("multipart", "as-sent", with_tail(multipart_payload({4, 0, 10}), {8, 1, 1, 0, 0}));
  write("multipart", "shared-one-block", with_tail(Bytes(30, std::byte{0x11}), {16, 0, 1, 0, 1, 1, 0, 10, 0, 20}));
  write("multipart", "cut-table", with_tail(multipart_payload({1, 2, 3, 4, 5, 6}), {40, 1, 1, 3, 0, 35, 0, 9, 0, 0, 0}));
}

void tcp_stream() {
  // Tail, in the order consumed: staging (2 bytes), copy threshold (2), max frame (3), pool blocks (1), cuts (4).
  const std::initializer_list<std::uint8_t> tail = {0x10, 0x00, 0x04, 0x00, 0x00, 0x00, 0x0f, 8, 1, 2, 3, 4};
  write("tcp_stream", "small-frames", with_tail(frames({32, 64, 100, 33, 4096}), tail));
  write("tcp_stream", "large-frame", with_tail(frames({64, 20000, 40}), tail));
}

void message_stream() {
  // Messages: a length (2 bytes, from the end, consumed per message) and that many bytes from the front.
  Bytes packed = frames({64, 96, 200});
  const auto length = static_cast<std::uint8_t>(packed.size());
  write("message_stream", "packed", with_tail(packed, {0xff, 0xff, 0x00, 8, 0, length}));
  Bytes spanning = frames({6000});
  write("message_stream", "spanning", with_tail(spanning, {0xff, 0xff, 0x00, 8, 0x10, 0x00, 0x07, 0x70}));
}

void connection_messages() {
  Bytes request(daqx::ptibv::kConnectRequestSize);
  daqx::ptibv::encode_request({.credit_buffers = 16}, request.data());
  write("connection_messages", "ibv-request", with_tail(request, {0}));
  Bytes reply(daqx::ptibv::kConnectReplySize);
  daqx::ptibv::encode_reply({.buffer_size = 65536, .posted_total = 64}, reply.data());
  write("connection_messages", "ibv-reply", with_tail(reply, {1}));
  Bytes padded = reply;
  padded.resize(56);  // rdma_cm pads private data with zeros
  write("connection_messages", "ibv-reply-padded", with_tail(padded, {1}));
  Bytes credit(daqx::pt::kCreditMessageSize);
  daqx::pt::encode_credit({.buffer_size = 8192, .posted_total = 1000}, credit.data());
  write("connection_messages", "credit", with_tail(credit, {2}));
}

void evb_protocol() {
  using namespace daqx::evb;
  Request request{.run = 3, .generation = 2, .incarnation = 99, .priority = 200, .total_slots = 8};
  request.free_slots = {0, 1, 5};
  request.discards = {Discard{.first_event = 10, .count = 4, .slot = 2, .incomplete = 1, .corrupt = 0}};
  write("evb_protocol", "request", with_tail(encoded(request), {0}));
  Allocate allocate{.run = 3};
  allocate.assignments = {Assignment{.bu = 200, .generation = 2, .slot = 1, .count = 4, .first_event = 100}};
  write("evb_protocol", "allocate", with_tail(encoded(allocate), {1}));
  write("evb_protocol", "ru-status", with_tail(encoded(RuStatus{.run = 3, .incarnation = 5, .fragments_sent = 7}), {2}));
  write("evb_protocol", "control", with_tail(encoded(Control{.kind = ControlKind::run_failed, .run = 3, .text = "why"}), {3}));
  Bytes block(kBlockHeaderBytes + 2 * (kPieceHeaderBytes + 16));
  ByteWriter out(block.data(), block.size());
  encode(BlockHeader{.run = 3, .generation = 2, .slot = 1, .batch_count = 2, .batch_first_event = 100, .piece_count = 2},
         out);
  const std::array<std::byte, 16> piece{};
  for (std::uint64_t event : {100, 101}) {
    encode(PieceHeader{.event = event, .superfragment_size = 16, .offset = 0, .size = 16}, out);
    out.put_bytes(piece.data(), piece.size());
  }
  write("evb_protocol", "block", with_tail(block, {4}));
}

void event_file(const fs::path& scratch) {
  using namespace daqx::evb;
  fs::remove_all(scratch);
  {
    FileWriter writer(FileOutputConfig{.directory = scratch.string()}, 12, 200, 7);
    const std::array<std::byte, 24> payload{};
    const std::array<std::span<const std::byte>, 1> pieces{std::span<const std::byte>(payload.data(), 13)};
    const std::array<EventRecordView::Fragment, 2> fragments{EventRecordView::Fragment{1, 13, pieces},
                                                             EventRecordView::Fragment{2, 13, pieces}};
    for (std::uint64_t event = 1; event <= 3; ++event) writer.write({.run = 12, .event = event, .flags = 0, .fragments = fragments});
  }
  for (const auto& entry : fs::directory_iterator(scratch)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<char> text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Bytes bytes(text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
    write("event_file", "three-events", bytes);
    bytes.resize(bytes.size() - kTrailerRecordBytes);
    write("event_file", "no-trailer", bytes);
  }
  fs::remove_all(scratch);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  corpus = argv[1];
  frame_header();
  multipart();
  tcp_stream();
  message_stream();
  connection_messages();
  evb_protocol();
  event_file(fs::temp_directory_path() / "daqx-fuzz-seeds");
  std::printf("seeds written under %s\n", corpus.c_str());
  return 0;
}
