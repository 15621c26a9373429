// The pool and Ref API in one page: the example of docs/mempool.md, compiled and run by the tests.
#include <cstdio>
#include <cstring>

#include "daqx/mempool/pool.hpp"

int main() {
  using namespace daqx::mem;

  // Power-of-two classes from 256 B to 64 KiB, 1 MiB chunks, at most 4 MiB per class, heap memory.
  // Use make_allocator("numa:0") or "hugepage" for NUMA-bound or huge-page chunks.
  Pool pool(PoolConfig::geometric("example/pool", 256, 64 * 1024, 1 << 20, 4 << 20), make_allocator("heap"));

  // Back-pressure instead of a crash: allocation fails softly and the pool says when to retry.
  pool.on_available([] { std::puts("blocks are free again"); });

  // A header block followed by a payload: a chain of two blocks, no copy.
  Ref header = pool.allocate(64);
  Ref payload = pool.allocate(10000);
  if (!header || !payload) return 1;  // exhausted: back off and wait for on_available
  std::memset(payload.data(), 0x5a, payload.size());
  std::memcpy(header.data(), "HDR", 4);

  // Fan-out: the same payload behind two headers, each a cheap shared copy.
  Ref other_header = pool.allocate(64);
  other_header.append(payload.share());
  header.append(std::move(payload));  // payload is now empty: ownership moved into the chain

  std::printf("chain of %zu blocks, %zu bytes\n", header.chain_length(), header.total_size());
  for (const Block* block = header.head(); block != nullptr; block = block->next())
    std::printf("  block of %zu B, window %zu+%zu\n", block->capacity(), block->offset(), block->size());

  // A transport loans the chain: into_raw() when posting, from_raw() when the network is done.
  Block* in_flight = std::move(header).into_raw();
  Ref completed = Ref::from_raw(in_flight);
  completed.reset();     // header goes back; the payload stays while other_header holds it
  other_header.reset();  // last owner: the payload goes back too

  PoolStats stats = pool.stats();
  std::printf("%s: %zu blocks in use, %zu B reserved from %s\n", stats.name.c_str(), stats.blocks_used(),
              stats.bytes_reserved, stats.allocator.c_str());
  return stats.blocks_used() == 0 ? 0 : 1;
}
