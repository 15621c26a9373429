// Commits one buffer misuse on purpose, so a test can check how each build reacts to it.
#include <cstdio>
#include <cstring>
#include <string>

#include "daqx/mempool/pool.hpp"

using namespace daqx::mem;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mempool_misuse double-release|empty-access|raw-after-release|leak\n");
    return 2;
  }
  std::string which = argv[1];
  PoolConfig config;
  config.name = "misuse/pool";
  config.classes = {{256, 64, 1, 1}};  // enough blocks for threads' caches: the misuse meets a cached block
  Pool pool(config, std::make_shared<HeapAllocator>());
  if (which == "double-release") {
    Block* loaned = pool.allocate(8).into_raw();
    Ref::from_raw(loaned).reset();
    Ref::from_raw(loaned).reset();
  } else if (which == "empty-access") {
    Ref ref = pool.allocate(8);
    Ref moved = std::move(ref);
    std::printf("%p\n", static_cast<void*>(ref.data()));  // NOLINT(bugprone-use-after-move)
  } else if (which == "raw-after-release") {
    Ref ref = pool.allocate(8);
    volatile std::byte* raw = ref.data();
    ref.reset();
    raw[0] = std::byte{1};  // writes into a block that is back in its pool
  } else if (which == "leak") {
    (void)pool.allocate(8).into_raw();
  } else {
    return 2;
  }
  std::printf("misuse done\n");
  return 0;
}
