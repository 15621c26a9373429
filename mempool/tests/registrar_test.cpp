// The registration hook: once per chunk at creation and destruction, keys found from any block in O(1).
#include <catch2/catch.hpp>

#include <map>

#include "daqx/mempool/pool.hpp"

using namespace daqx::mem;

namespace {

// Stands in for ibv_reg_mr / fi_mr_reg: counts calls and hands out a distinct key per chunk.
class CountingRegistrar final : public Registrar {
 public:
  explicit CountingRegistrar(std::uint64_t key_base, bool refuse_chunks = false) : refuse(refuse_chunks), key_base_(key_base) {}
  std::string_view name() const override { return "counting"; }
  std::string register_chunk(std::byte* base, std::size_t bytes, RegistrationKey& key) override {
    if (refuse) return "refused for the test";
    ++registered;
    key.key = key_base_ + registered;
    key.handle = base;
    live[base] = bytes;
    return {};
  }
  void deregister_chunk(std::byte* base, std::size_t bytes, const RegistrationKey& key) noexcept override {
    ++deregistered;
    if (live.count(base) == 1 && live[base] == bytes && key.handle == base) live.erase(base);
  }
  int registered = 0;
  int deregistered = 0;
  bool refuse;
  std::map<std::byte*, std::size_t> live;

 private:
  std::uint64_t key_base_;
};

PoolConfig config() {
  PoolConfig c;
  c.name = "test/registrar";
  c.classes = {{1024, 4, 1, 3}};
  return c;
}

}  // namespace

TEST_CASE("a registrar sees every chunk once, existing and future, and deregisters each once", "[registrar]") {
  CountingRegistrar first(1000);
  CountingRegistrar second(2000);
  {
    Pool pool(config(), std::make_shared<HeapAllocator>());
    std::size_t slot_first = pool.add_registrar(first);
    CHECK(first.registered == 1);  // the initial chunk
    std::vector<Ref> held;
    for (int i = 0; i < 5; ++i) held.push_back(pool.allocate(1024));  // the fifth grows a chunk
    CHECK(first.registered == 2);
    std::size_t slot_second = pool.add_registrar(second);
    CHECK(second.registered == 2);
    CHECK(slot_first != slot_second);
    for (int i = 0; i < 4; ++i) held.push_back(pool.allocate(1024));  // a third chunk, both see it
    CHECK(first.registered == 3);
    CHECK(second.registered == 3);
    // Every block carries its chunk's key for each registrar: blocks of one chunk share it.
    CHECK(held[0].head()->key(slot_first).key == 1001);
    CHECK(held[3].head()->key(slot_first).key == 1001);
    CHECK(held[4].head()->key(slot_first).key == 1002);
    CHECK(held[4].head()->key(slot_second).key != 0);
    CHECK(held[8].head()->key(slot_second).key == 2003);
    held.clear();
  }
  CHECK(first.deregistered == 3);
  CHECK(second.deregistered == 3);
  CHECK(first.live.empty());
  CHECK(second.live.empty());
}

TEST_CASE("a chunk a registrar refuses is not used: growth fails softly", "[registrar]") {
  CountingRegistrar refusing(0, false);
  Pool pool(config(), std::make_shared<HeapAllocator>());
  pool.add_registrar(refusing);
  refusing.refuse = true;
  std::vector<Ref> held;
  for (int i = 0; i < 4; ++i) held.push_back(pool.allocate(1024));
  CHECK_FALSE(pool.allocate(1024));
  CHECK(pool.stats().classes[0].chunks == 1);
  CHECK(pool.stats().classes[0].failed_allocations == 1);
}

TEST_CASE("a registrar that refuses an existing chunk is not added and leaves nothing registered", "[registrar]") {
  CountingRegistrar refusing(0, true);
  Pool pool(config(), std::make_shared<HeapAllocator>());
  CHECK_THROWS_WITH(pool.add_registrar(refusing), Catch::Contains("refused for the test"));
  CHECK(refusing.live.empty());
  Ref ref = pool.allocate(1024);
  CHECK(ref);
}

TEST_CASE("removing a registrar deregisters its chunks and frees its slot", "[registrar]") {
  CountingRegistrar counting(0);
  Pool pool(config(), std::make_shared<HeapAllocator>());
  std::size_t slot = pool.add_registrar(counting);
  pool.remove_registrar(slot);
  CHECK(counting.deregistered == 1);
  CHECK(counting.live.empty());
  CHECK(pool.add_registrar(counting) == slot);
}

TEST_CASE("a registrar can be given the same slot in every pool, and a taken slot is refused", "[registrar]") {
  CountingRegistrar network(3000);
  CountingRegistrar other(4000);
  Pool a(config(), std::make_shared<HeapAllocator>());
  Pool b(config(), std::make_shared<HeapAllocator>());
  a.add_registrar(other);  // takes slot 0 in a only
  a.add_registrar(network, 2);
  b.add_registrar(network, 2);
  Ref from_a = a.allocate(1024);
  Ref from_b = b.allocate(1024);
  CHECK(from_a.head()->key(2).key != 0);
  CHECK(from_b.head()->key(2).key != 0);
  CHECK(from_a.head()->key(2).key != from_b.head()->key(2).key);
  CHECK_THROWS_WITH(a.add_registrar(other, 2), Catch::Contains("slot 2 is taken"));
  CHECK_THROWS_WITH(a.add_registrar(other, kMaxRegistrars), Catch::Contains("out of range"));
  CHECK(a.add_registrar(other) == 1);  // the first free slot
  a.remove_registrar(2);
  b.remove_registrar(2);
  CHECK(network.deregistered == 2);
}
