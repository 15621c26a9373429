// Fuzz target: pttcp's stream reader (pt/pttcp/src/frame_reader.*) on a byte stream that a peer controls,
// delivered in reads cut anywhere. Properties: every frame it hands out passes the header check and holds
// exactly its declared length of the stream's bytes, a refused stream says why, an exhausted pool only pauses,
// and every block goes back to the pool (no leak, no double release: the pool's checks are on in this build).
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../fuzz_support.hpp"
#include "daqx/mempool/allocator.hpp"
#include "frame_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  // Small pools, staging buffers and limits, so that the fuzzer reaches large frames, exhaustion and refusals.
  const std::size_t staging = input.ConsumeIntegralInRange<std::size_t>(64, 8192);
  const std::size_t copy_threshold = input.ConsumeIntegralInRange<std::size_t>(0, staging);
  const auto max_frame = input.ConsumeIntegralInRange<std::uint32_t>(daqx::kFrameHeaderSize, 1u << 20);
  const auto blocks = input.ConsumeIntegralInRange<std::size_t>(1, 16);
  const auto seed = input.ConsumeIntegral<std::uint32_t>();
  const std::vector<std::uint8_t> stream = input.ConsumeRemainingBytes<std::uint8_t>();

  daqx::mem::PoolConfig config;
  config.name = "fuzz/tcp";
  config.classes = {{256, blocks, 1, 1}, {4096, blocks, 1, 1}, {65536, blocks, 1, 1}};
  daqx::mem::Pool pool(config, std::make_shared<daqx::mem::HeapAllocator>());
  {
    daqx::pttcp::FrameReader reader(pool, staging, copy_threshold, max_frame);
    std::size_t at = 0;
    std::size_t delivered = 0;
    std::uint32_t cut = seed;
    std::vector<daqx::Frame> held;  // frames an application still holds: the pool runs dry
    for (;;) {
      daqx::Frame frame;
      const auto result = reader.next(frame);
      if (result == daqx::pttcp::FrameReader::Result::frame) {
        delivered += daqx::fuzz::require_whole_frame(frame, max_frame);
        if (delivered > at) std::abort();  // never more out than came in
        if (held.size() < blocks / 2) held.push_back(std::move(frame));
        continue;
      }
      if (result == daqx::pttcp::FrameReader::Result::bad_frame) {
        if (reader.error().empty()) std::abort();
        break;
      }
      if (result == daqx::pttcp::FrameReader::Result::no_memory) {
        if (held.empty()) break;  // nothing to give back: the connection waits for blocks (not here)
        held.clear();             // the application released its frames: read on
        continue;
      }
      if (at == stream.size()) break;
      iovec vectors[16];
      const int count = reader.read_target(vectors, 16);
      cut = cut * 1103515245u + 12345u;  // a socket's read sizes: any from 1 byte up
      const std::size_t want = 1 + (cut >> 8) % 3000;
      std::size_t moved = 0;
      for (int v = 0; v < count && at < stream.size() && moved < want; ++v) {
        const std::size_t n = std::min({vectors[v].iov_len, stream.size() - at, want - moved});
        std::memcpy(vectors[v].iov_base, stream.data() + at, n);
        at += n;
        moved += n;
        if (n < vectors[v].iov_len) break;
      }
      if (moved == 0) std::abort();  // a reader that asks for bytes must have room for them
      reader.advance(moved);
    }
  }
  if (pool.blocks_in_use() != 0) std::abort();  // the reader and the frames gave every block back
  return 0;
}
