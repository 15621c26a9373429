// ptofi's flow control and message cutting, without libfabric: the receiver can never be sent more
// messages than it has buffers for, credit updates are idempotent, and frames are cut along the blocks.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <vector>

#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/pt/credit_flow.hpp"
#include "daqx/pt/message_cutter.hpp"

using namespace daqx;
using namespace daqx::pt;

namespace {

mem::Pool make_pool() {
  mem::PoolConfig config;
  config.name = "test/ptofi";
  config.classes = {{64, 64, 1, 1}, {1024, 64, 1, 1}, {4096, 64, 1, 1}};
  return mem::Pool(config, std::make_shared<mem::HeapAllocator>());
}

// A frame of the given block sizes, bytes numbered 0, 1, 2, ... across the chain.
mem::Ref make_frame(mem::Pool& pool, const std::vector<std::size_t>& sizes) {
  mem::Ref frame;
  std::size_t n = 0;
  for (std::size_t size : sizes) {
    mem::Ref block = pool.allocate(std::max<std::size_t>(size, 1));
    REQUIRE(block);
    block.resize(size);
    for (std::size_t i = 0; i < size; ++i) block.data()[i] = static_cast<std::byte>(n++ & 0xFF);
    if (frame)
      frame.append(std::move(block));
    else
      frame = std::move(block);
  }
  return frame;
}

// Cuts a frame into messages and checks that they cover it exactly, in order, within the limits.
std::vector<std::size_t> cut(const mem::Ref& frame, std::size_t max_bytes, std::size_t max_pieces) {
  std::vector<std::size_t> messages;
  mem::RefRing queue(4);
  queue.push(frame.share());
  SendCursor cursor;
  std::size_t seen = 0;
  for (int guard = 0; guard < 10000; ++guard) {
    MessagePieces pieces;
    next_message(queue, cursor, max_bytes, max_pieces, kNoRegistration, false, pieces);
    const bool last = pieces.frames_ended == 1;
    REQUIRE(pieces.count <= max_pieces);
    REQUIRE(pieces.bytes <= max_bytes);
    REQUIRE(pieces.bytes > 0);
    std::size_t total = 0;
    for (std::size_t i = 0; i < pieces.count; ++i) {
      const auto* bytes = static_cast<const std::byte*>(pieces.iov[i].iov_base);
      for (std::size_t b = 0; b < pieces.iov[i].iov_len; ++b)
        REQUIRE(bytes[b] == static_cast<std::byte>((seen + total + b) & 0xFF));
      total += pieces.iov[i].iov_len;
      REQUIRE(pieces.descriptors[i] == nullptr);
    }
    REQUIRE(total == pieces.bytes);
    seen += total;
    messages.push_back(total);
    if (last) {
      REQUIRE(cursor.at_frame_start());
      REQUIRE(cursor.frame == 1);
      break;
    }
    REQUIRE(pieces.frames_ended == 0);
  }
  REQUIRE(seen == frame.total_size());
  return messages;
}

}  // namespace

TEST_CASE("a credit message survives encoding, and anything else is refused", "[ptofi][flow]") {
  std::byte bytes[kCreditMessageSize];
  encode_credit({131072, 123456789012ull}, bytes);
  CreditMessage decoded;
  REQUIRE(decode_credit(bytes, sizeof bytes, decoded));
  CHECK(decoded.buffer_size == 131072);
  CHECK(decoded.posted_total == 123456789012ull);
  CHECK_FALSE(decode_credit(bytes, sizeof bytes - 1, decoded));
  bytes[0] = std::byte{0};
  CHECK_FALSE(decode_credit(bytes, sizeof bytes, decoded));
  encode_credit({0, 5}, bytes);
  CHECK_FALSE(decode_credit(bytes, sizeof bytes, decoded));  // a zero buffer size would stall the sender
}

TEST_CASE("a sender never has more messages out than the receiver granted, and late grants change nothing",
          "[ptofi][flow]") {
  SendCredits credits;
  CHECK_FALSE(credits.ready());
  CHECK(credits.available() == 0);
  credits.grant({4096, 8});
  REQUIRE(credits.ready());
  for (int i = 0; i < 8; ++i) credits.consume();
  CHECK(credits.available() == 0);
  credits.grant({4096, 6});  // an older update arriving late
  CHECK(credits.available() == 0);
  credits.grant({4096, 12});
  CHECK(credits.available() == 4);
}

TEST_CASE("the receiver reports in batches, and at once when the sender runs short", "[ptofi][flow]") {
  ReceiveCredits credits(16);  // depth 64
  CHECK_FALSE(credits.report_due());
  credits.posted(64);
  REQUIRE(credits.report_due());  // the first grant goes out at once
  CHECK(credits.report() == 64);
  CHECK_FALSE(credits.report_due());

  SECTION("a few reposts while the sender still has plenty wait for the batch") {
    for (int i = 0; i < 10; ++i) {
      credits.received();
      credits.posted();
    }
    CHECK_FALSE(credits.report_due());  // sender has 54 left, 10 unreported
    for (int i = 0; i < 6; ++i) {
      credits.received();
      credits.posted();
    }
    CHECK(credits.report_due());  // 16 unreported
    CHECK(credits.report() == 80);
  }
  SECTION("a receiver that can repost only a few buffers still tells the sender, so nothing waits forever") {
    for (int i = 0; i < 64; ++i) credits.received();  // the sender used everything
    credits.posted(3);                                  // the pool had only three blocks
    CHECK(credits.report_due());
    CHECK(credits.report() == 67);
  }
  SECTION("whatever the order of events, the sender is never granted more than was posted") {
    std::uint64_t sender_used = 0;
    SendCredits sender;
    sender.grant({4096, 64});
    for (int step = 0; step < 5000; ++step) {
      if (sender.available() > 0 && step % 3 != 0) {
        sender.consume();
        ++sender_used;
        credits.received();
        if (step % 7 != 0) credits.posted();  // sometimes the pool is empty
      } else {
        credits.posted();
      }
      REQUIRE(sender_used <= credits.posted_total());
      if (credits.report_due()) sender.grant({4096, credits.report()});
      REQUIRE(sender.used() + sender.available() <= credits.posted_total());
    }
  }
}

TEST_CASE("frames are cut along their blocks into messages within the buffer size and piece limit",
          "[ptofi][flow]") {
  mem::Pool pool = make_pool();
  SECTION("a small frame is one message") {
    mem::Ref frame = make_frame(pool, {64});
    CHECK(cut(frame, 4096, 4) == std::vector<std::size_t>{64});
  }
  SECTION("a chain larger than a buffer is cut at buffer boundaries, across blocks") {
    mem::Ref frame = make_frame(pool, {1000, 1000, 1000, 1000, 1000});
    CHECK(cut(frame, 2048, 4) == std::vector<std::size_t>{2048, 2048, 904});
  }
  SECTION("the piece limit ends a message early") {
    mem::Ref frame = make_frame(pool, {64, 64, 64, 64, 64});
    CHECK(cut(frame, 4096, 2) == std::vector<std::size_t>{128, 128, 64});
    CHECK(cut(frame, 4096, 1) == std::vector<std::size_t>{64, 64, 64, 64, 64});
  }
  SECTION("empty blocks are skipped, also at the end") {
    mem::Ref frame = make_frame(pool, {1000, 0, 1000, 0});
    CHECK(cut(frame, 4096, 4) == std::vector<std::size_t>{2000});
  }
  SECTION("a block larger than a buffer spans several messages") {
    mem::Ref frame = make_frame(pool, {4096, 1000});
    CHECK(cut(frame, 1500, 16) == std::vector<std::size_t>{1500, 1500, 1500, 596});
  }
}

namespace {

// A frame of `total` bytes: a header that says so, then payload, in blocks of at most block bytes.
mem::Ref frame_of(mem::Pool& pool, std::size_t total, std::size_t block = 4096) {
  mem::Ref frame;
  for (std::size_t done = 0; done < total; done += block) {
    mem::Ref piece = pool.allocate(4096);
    REQUIRE(piece);
    piece.resize(std::min(block, total - done));
    if (frame) {
      frame.append(std::move(piece));
    } else {
      FrameHeader header;
      header.total_length = static_cast<std::uint32_t>(total);
      encode_header(header, piece.data());
      frame = std::move(piece);
    }
  }
  return frame;
}

// Packs the queue into messages of max_bytes and max_pieces; returns each message's (bytes, frames ended), and
// checks that every frame header lies whole in one message.
std::vector<std::pair<std::size_t, std::size_t>> pack(mem::RefRing& queue, std::size_t max_bytes, std::size_t max_pieces) {
  std::vector<std::pair<std::size_t, std::size_t>> messages;
  SendCursor cursor;
  std::size_t frames = 0;
  while (cursor.frame < queue.size()) {
    MessagePieces pieces;
    const SendCursor before = cursor;
    next_message(queue, cursor, max_bytes, max_pieces, kNoRegistration, true, pieces);
    REQUIRE(pieces.bytes > 0);
    REQUIRE(pieces.bytes <= max_bytes);
    REQUIRE(pieces.count <= max_pieces);
    // Walk the message's bytes: wherever a frame starts, its header is whole here.
    std::vector<std::byte> bytes;
    for (std::size_t i = 0; i < pieces.count; ++i) {
      const auto* p = static_cast<const std::byte*>(pieces.iov[i].iov_base);
      bytes.insert(bytes.end(), p, p + pieces.iov[i].iov_len);
    }
    std::size_t at = 0;
    if (!before.at_frame_start()) {  // the message goes on with a frame started before
      std::size_t sent = 0;
      for (const mem::Block* b = queue.at(before.frame).head(); b != before.block; b = b->next()) sent += b->size();
      at = queue.at(before.frame).total_size() - sent - before.offset;
    }
    while (at < bytes.size()) {
      REQUIRE(bytes.size() - at >= kFrameHeaderSize);
      at += decode_header(bytes.data() + at).total_length;
    }
    frames += pieces.frames_ended;
    messages.emplace_back(pieces.bytes, pieces.frames_ended);
  }
  REQUIRE(frames == queue.size());
  return messages;
}

}  // namespace

TEST_CASE("small frames queued together are packed into one message, and no header is ever cut", "[pt][flow]") {
  mem::Pool pool = make_pool();
  mem::RefRing queue(64);
  SECTION("many small frames fill messages up to the buffer size") {
    for (int i = 0; i < 40; ++i) queue.push(frame_of(pool, 100));
    using M = std::vector<std::pair<std::size_t, std::size_t>>;
    CHECK(pack(queue, 1024, 16) == M{{1000, 10}, {1000, 10}, {1000, 10}, {1000, 10}});
  }
  SECTION("a frame that fits a message is never cut; one too large for any is, where its header fits") {
    queue.push(frame_of(pool, 1000));
    queue.push(frame_of(pool, 2000, 1000));
    queue.push(frame_of(pool, 100));
    queue.push(frame_of(pool, 900));
    queue.push(frame_of(pool, 3000, 1000));
    using M = std::vector<std::pair<std::size_t, std::size_t>>;
    // 24 bytes left after the first frame: too few for the next header. The 2000-byte frame is cut; the 100-byte
    // one does not fit the 48 bytes left beside its tail and starts the next message, with the 900-byte one;
    // the 3000-byte one, too large for any message, is not started in the 24 bytes left (a header needs 32).
    CHECK(pack(queue, 1024, 16) == M{{1000, 1}, {1024, 0}, {976, 1}, {1000, 2}, {1024, 0}, {1024, 0}, {952, 1}});
  }
  SECTION("a frame too large for any message fills the room left beside smaller ones") {
    queue.push(frame_of(pool, 500));
    queue.push(frame_of(pool, 3000, 1000));
    using M = std::vector<std::pair<std::size_t, std::size_t>>;
    CHECK(pack(queue, 1024, 16) == M{{1024, 1}, {1024, 0}, {1024, 0}, {428, 1}});
  }
  SECTION("the piece limit ends a message before a frame whose header would need another piece") {
    for (int i = 0; i < 4; ++i) queue.push(frame_of(pool, 100));
    using M = std::vector<std::pair<std::size_t, std::size_t>>;
    CHECK(pack(queue, 4096, 3) == M{{300, 3}, {100, 1}});
  }
}
