// Buffer references: windows, chains, move-only ownership, shared copies, loans and misuse detection.
#include <catch2/catch.hpp>

#include <cstring>
#include <type_traits>

#include "daqx/mempool/pool.hpp"
#include "daqx/mempool/ref_ring.hpp"
#include "misuse_capture.hpp"

using namespace daqx::mem;
using daqx::test::MisuseCapture;

static_assert(!std::is_copy_constructible_v<Ref> && !std::is_copy_assignable_v<Ref>, "Ref is move-only");
static_assert(std::is_nothrow_move_constructible_v<Ref> && std::is_nothrow_move_assignable_v<Ref>);

namespace {

Pool make_pool(std::size_t blocks = 8) {
  PoolConfig config;
  config.name = "test/ref";
  config.classes = {{1024, blocks, 1, 1}, {64, blocks, 1, 1}};
  return Pool(config, std::make_shared<HeapAllocator>());
}

}  // namespace

TEST_CASE("moving a Ref moves ownership, destroying the owner returns the block", "[ref]") {
  Pool pool = make_pool();
  Ref a = pool.allocate(100);
  std::byte* where = a.data();
  Ref b = std::move(a);
  CHECK_FALSE(a);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  CHECK(b.data() == where);
  CHECK(pool.blocks_in_use() == 1);
  b = Ref();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("a data window can be moved inside its block and never outside", "[ref]") {
  MisuseCapture misuse;
  Pool pool = make_pool();
  Ref ref = pool.allocate(64);
  ref.set_window(16, 32);
  CHECK(ref.offset() == 16);
  CHECK(ref.size() == 32);
  CHECK(ref.data() == ref.head()->memory() + 16);
  ref.set_window(1000, 100);
  CHECK(misuse.count(Misuse::bad_window) == 1);
  CHECK(ref.offset() == 16);  // unchanged
}

TEST_CASE("a chain carries data larger than one block, all or nothing", "[ref]") {
  Pool pool = make_pool();
  Ref chain = pool.allocate_chain(3000);
  REQUIRE(chain);
  CHECK(chain.chain_length() == 3);
  CHECK(chain.total_size() == 3000);
  CHECK(pool.stats().classes[1].blocks_used == 3);
  Ref too_long = pool.allocate_chain(9 * 1024);  // needs 9 blocks of 1 KiB, 5 remain
  CHECK_FALSE(too_long);
  CHECK(pool.stats().classes[1].blocks_used == 3);  // the partial chain went back
  chain.reset();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("header plus payload: append links, detach_next cuts", "[ref]") {
  Pool pool = make_pool();
  Ref header = pool.allocate(32);
  Ref payload = pool.allocate(1000);
  std::byte* payload_data = payload.data();
  header.append(std::move(payload));
  CHECK_FALSE(payload);  // NOLINT(bugprone-use-after-move)
  CHECK(header.chain_length() == 2);
  CHECK(header.total_size() == 1032);
  CHECK(header.head()->next()->data() == payload_data);
  Ref rest = header.detach_next();
  CHECK(header.chain_length() == 1);
  CHECK(rest.data() == payload_data);
}

TEST_CASE("a shared copy is cheap and the block returns when the last owner lets go", "[ref]") {
  Pool pool = make_pool();
  Ref payload = pool.allocate(1000);
  std::memset(payload.data(), 0xab, payload.size());
  Ref header_a = pool.allocate(32);
  Ref header_b = pool.allocate(32);
  header_a.append(payload.share());
  header_b.append(payload.share());
  CHECK(payload.shared());
  CHECK(header_a.head()->next()->data() == payload.data());  // same memory, no copy
  payload.reset();
  header_a.reset();
  CHECK(pool.stats().classes[1].blocks_used == 1);  // header_b still holds the payload
  CHECK(static_cast<unsigned char>(header_b.head()->next()->data()[999]) == 0xab);
  header_b.reset();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("a shared block cannot be changed", "[ref]") {
  MisuseCapture misuse;
  Pool pool = make_pool();
  Ref a = pool.allocate(100);
  Ref b = a.share();
  a.set_window(0, 10);
  CHECK(misuse.count(Misuse::shared_mutation) == 1);
  CHECK(b.size() == 100);
  Ref tail = pool.allocate(10);
  a.append(std::move(tail));
  CHECK(misuse.count(Misuse::shared_mutation) == 2);
}

TEST_CASE("a loan to the network comes back as the same block", "[ref]") {
  Pool pool = make_pool();
  Ref frame = pool.allocate(500);
  std::byte* where = frame.data();
  Block* loaned = std::move(frame).into_raw();  // e.g. the work-request id of a posted send
  CHECK(pool.blocks_in_use() == 1);
  Ref completed = Ref::from_raw(loaned);
  CHECK(completed.data() == where);
  completed.reset();
  CHECK(pool.blocks_in_use() == 0);
}

TEST_CASE("completing a loan twice is reported as a double release and does not corrupt the pool", "[ref]") {
  MisuseCapture misuse;
  Pool pool = make_pool(2);
  Block* loaned = pool.allocate(10).into_raw();
  Ref::from_raw(loaned).reset();
  Ref::from_raw(loaned).reset();  // the bug under test
  CHECK(misuse.count(Misuse::double_release) == 1);
  CHECK(pool.stats().classes[0].double_releases == 1);
  // The free list still holds each block once: two allocations give two distinct blocks, a third fails.
  Ref a = pool.allocate(10);
  Ref b = pool.allocate(10);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a.data() != b.data());
  CHECK_FALSE(pool.allocate(10));
}

TEST_CASE("destroying a pool with blocks still out is reported as a leak", "[ref]") {
  MisuseCapture misuse;
  Block* kept = nullptr;
  {
    Pool pool = make_pool();
    kept = pool.allocate(10).into_raw();
  }
  CHECK(kept != nullptr);
  CHECK(misuse.count(Misuse::leak) == 1);
  CHECK_THAT(misuse.last_detail(), Catch::Contains("1 blocks of 64 B still in use"));
}

// Only in a build with the checks (the sanitizer build): the release build does not pay for this one.
#if defined(DAQX_CHECKS)
TEST_CASE("access through an empty Ref is reported in checked builds", "[ref]") {
  MisuseCapture misuse;
  Ref empty;
  (void)empty.share();
  CHECK(misuse.count(Misuse::use_after_release) == 1);
}
#endif

namespace {

Pool make_pool_with_views(std::size_t views) {
  PoolConfig config;
  config.name = "test/views";
  config.classes = {{1024, 4, 1, 1}};
  config.views = views;
  return Pool(config, std::make_shared<HeapAllocator>());
}

}  // namespace

TEST_CASE("a view shows part of a block without copying and keeps that block until the last view goes",
          "[ref][view]") {
  Pool pool = make_pool_with_views(4);
  Ref buffer = pool.allocate(300);
  REQUIRE(buffer);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer.data()[i] = static_cast<std::byte>(i);
  Ref first = buffer.view(0, 100);
  Ref second = buffer.view(100, 200);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first.data() == buffer.data());  // the same memory, not a copy
  CHECK(second.data() == buffer.data() + 100);
  CHECK(second.size() == 200);
  CHECK(second.data()[5] == static_cast<std::byte>(105));
  CHECK(pool.views_in_use() == 2);
  CHECK(pool.stats().views_used == 2);
  CHECK(pool.stats().views_total == 4);

  buffer.reset();  // the receiver's own hold goes first, as when a packed message has been cut into frames
  CHECK(pool.blocks_in_use() == 1);
  first.reset();
  CHECK(pool.blocks_in_use() == 1);
  CHECK(second.data()[199] == static_cast<std::byte>(299));
  second.reset();
  CHECK(pool.blocks_in_use() == 0);
  CHECK(pool.views_in_use() == 0);
}

TEST_CASE("a view of a view holds the block that owns the memory, and views chain like blocks", "[ref][view]") {
  Pool pool = make_pool_with_views(4);
  Ref buffer = pool.allocate(256);
  REQUIRE(buffer);
  Ref outer = buffer.view(64, 128);
  Ref inner = outer.view(32, 16);
  REQUIRE(inner);
  CHECK(inner.data() == buffer.data() + 96);
  outer.reset();
  buffer.reset();
  CHECK(pool.blocks_in_use() == 1);  // inner still holds the block itself, not the view it was cut from
  CHECK(pool.views_in_use() == 1);

  // A frame that crossed a pack boundary: the tail of one message followed by the head of the next.
  Ref second_buffer = pool.allocate(256);
  REQUIRE(second_buffer);
  Ref tail = second_buffer.view(0, 8);
  second_buffer.reset();
  inner.append(std::move(tail));
  CHECK(inner.chain_length() == 2);
  CHECK(inner.total_size() == 24);
  inner.reset();
  CHECK(pool.blocks_in_use() == 0);
  CHECK(pool.views_in_use() == 0);
}

TEST_CASE("views run out softly and say when one is back, and there is none out of range or without views",
          "[ref][view]") {
  MisuseCapture misuse;
  Pool pool = make_pool_with_views(2);
  int notified = 0;
  pool.on_available([&] { ++notified; });
  Ref buffer = pool.allocate(100);
  Ref a = buffer.view(0, 10);
  Ref b = buffer.view(10, 10);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(buffer.view(20, 10));  // exhausted: back-pressure, not an error
  CHECK(misuse.count(Misuse::bad_window) == 0);
  a.reset();
  CHECK(notified == 1);
  CHECK(buffer.view(20, 10));

  CHECK_FALSE(buffer.view(90, 20));  // past the window
  CHECK(misuse.count(Misuse::bad_window) == 1);

  Pool plain = make_pool();
  Ref block = plain.allocate(100);
  CHECK_FALSE(block.view(0, 10));  // a pool made without views
}

namespace {

// Records the tokens of foreign blocks released.
struct ReleaseLog final : ForeignRelease {
  std::vector<std::uint64_t> tokens;
  void released(std::uint64_t token) noexcept override { tokens.push_back(token); }
};

}  // namespace

TEST_CASE("a foreign block shows memory the pool does not own, and its release tells the pool's ForeignRelease "
          "its token once", "[ref][foreign]") {
  Pool pool = make_pool_with_views(2);
  ReleaseLog log;
  pool.set_foreign_release(&log);
  std::vector<std::byte> elsewhere(256);
  Ref block = pool.wrap_foreign(elsewhere.data(), 200, 42);
  REQUIRE(block);
  CHECK(block.data() == elsewhere.data());
  CHECK(block.size() == 200);
  CHECK(block.head()->is_foreign());
  CHECK_FALSE(block.head()->is_view());
  CHECK(block.head()->key(0).handle == nullptr);  // no registration: the memory is not this process's
  Ref part = block.view(10, 20);                  // a view of it keeps it alive
  REQUIRE(part);
  block.reset();
  CHECK(log.tokens.empty());
  part.reset();
  CHECK(log.tokens == std::vector<std::uint64_t>{42});
  CHECK(pool.views_in_use() == 0);
  // Without descriptors left, no foreign block; without a ForeignRelease, releases only free the descriptor.
  Ref one = pool.wrap_foreign(elsewhere.data(), 1, 1), two = pool.wrap_foreign(elsewhere.data(), 1, 2);
  CHECK_FALSE(pool.wrap_foreign(elsewhere.data(), 1, 3));
  pool.set_foreign_release(nullptr);
  one.reset();
  two.reset();
  CHECK(log.tokens.size() == 1);
}

TEST_CASE("a foreign block wrapped with a registration record answers its keys, and so do its views, so that a "
          "transport can pass it on",
          "[ref][foreign]") {
  Pool pool = make_pool_with_views(4);
  ReleaseLog log;
  pool.set_foreign_release(&log);
  std::vector<std::byte> elsewhere(256);
  Chunk record;
  int marker = 0;
  record.keys[1].descriptor = &marker;
  record.keys[1].key = 7;
  Ref block = pool.wrap_foreign(elsewhere.data(), 200, 9, &record);
  REQUIRE(block);
  CHECK(block.head()->is_foreign());
  CHECK(block.head()->key(1).descriptor == &marker);
  CHECK(block.head()->key(1).key == 7);
  CHECK(block.head()->key(0).handle == nullptr);  // other registrars' slots stay empty
  Ref part = block.view(10, 20);
  REQUIRE(part);
  CHECK(part.head()->key(1).descriptor == &marker);
  block.reset();
  part.reset();
  CHECK(log.tokens == std::vector<std::uint64_t>{9});  // released as any foreign block
}

TEST_CASE("a ref ring keeps its frames in order while its slots grow to the longest queue it has had, never past "
          "its capacity, and gives every block back when cleared",
          "[ref][ring]") {
  Pool pool = make_pool(64);
  RefRing ring(40);
  CHECK(ring.capacity() == 40);
  std::uint8_t next = 0;
  std::uint8_t expected = 0;
  const auto push = [&] {
    Ref ref = pool.allocate(64);
    REQUIRE(ref);
    ref.data()[0] = static_cast<std::byte>(next++);
    ring.push(std::move(ref));
  };
  // Wrap around the first slots, then grow twice with the head in the middle.
  for (int i = 0; i < 10; ++i) push();
  for (int i = 0; i < 6; ++i) CHECK(ring.take_front().data()[0] == static_cast<std::byte>(expected++));
  while (!ring.full()) push();
  CHECK(ring.size() == 40);
  for (std::size_t i = 0; i < ring.size(); ++i) CHECK(ring.at(i).data()[0] == static_cast<std::byte>(expected + i));
  CHECK(pool.blocks_in_use() == 40);
  ring.pop();
  CHECK(pool.blocks_in_use() == 39);
  ring.clear();
  CHECK(ring.empty());
  CHECK(pool.blocks_in_use() == 0);
}
