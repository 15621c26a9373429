// Fuzz target: the shared layer's frame assembler (pt/base frame_assembler), which turns the messages of a
// ptofi or ptibv connection back into frames: several frames packed in one message, frames cut across
// messages, any bytes a peer sends. Properties: every frame handed out passes the header check and holds its
// declared length, a refused stream says why, running out of views only pauses, and every buffer and view goes
// back to the pool.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../fuzz_support.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"
#include "daqx/pt/frame_assembler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  constexpr std::size_t kMessageBytes = 4096;  // the receiver's buffer size: the largest message
  const auto max_frame = input.ConsumeIntegralInRange<std::uint32_t>(daqx::kFrameHeaderSize, 1u << 16);
  const auto views = input.ConsumeIntegralInRange<std::size_t>(0, 32);

  daqx::mem::PoolConfig config;
  config.name = "fuzz/messages";
  config.classes = {{kMessageBytes, 64, 1, 1}};
  config.views = views;
  daqx::mem::Pool pool(config, std::make_shared<daqx::mem::HeapAllocator>());
  {
    daqx::pt::FrameAssembler assembler(max_frame);
    std::vector<daqx::Frame> held;
    bool open = true;
    while (open && input.remaining_bytes() > 0) {
      // One message as the peer chose it: a length, then that many bytes (fewer at the end of the input).
      const auto length = input.ConsumeIntegralInRange<std::size_t>(0, kMessageBytes);
      const std::vector<std::uint8_t> bytes = input.ConsumeBytes<std::uint8_t>(length);
      daqx::mem::Ref message = pool.allocate(kMessageBytes);
      if (!message) break;  // every buffer is out: a real receiver would have posted no more
      if (!bytes.empty()) std::memcpy(message.data(), bytes.data(), bytes.size());
      assembler.push(std::move(message), bytes.size());
      for (;;) {
        daqx::Frame frame;
        const auto result = assembler.next(frame);
        if (result == daqx::pt::FrameAssembler::Result::frame) {
          daqx::fuzz::require_whole_frame(frame, max_frame);
          if (held.size() < 4) held.push_back(std::move(frame));
          continue;
        }
        if (result == daqx::pt::FrameAssembler::Result::bad) {
          if (assembler.error().empty()) std::abort();
          assembler.reset();  // the connection closes: everything it held goes back
          open = false;
        } else if (result == daqx::pt::FrameAssembler::Result::no_views && !held.empty()) {
          held.clear();  // the application released its frames: views are free again
          continue;
        }
        break;  // need_more, or no view and nothing to release (the connection waits)
      }
    }
    assembler.reset();
  }
  if (pool.blocks_in_use() != 0 || pool.views_in_use() != 0) std::abort();
  return 0;
}
