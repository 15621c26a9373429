// Fuzz target: the multipart framing (api multipart.hpp), what a receiver runs on a frame any peer sent: any bytes
// after the header, as a table made to add up or as they come, in a chain cut anywhere (empty blocks too), shared
// or not, with few or no views. Properties: take_parts either gives exactly the table's parts, whose bytes in order
// are the payload after the table, or says why and leaves the frame as it was; the parts it gives link back
// (check_parts, write_part_table, link_parts) into the same bytes and come apart again (unlink_parts) into the same
// parts; every block and view goes back to the pool.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../fuzz_support.hpp"
#include "daqx/api/multipart.hpp"
#include "daqx/mempool/allocator.hpp"
#include "daqx/mempool/pool.hpp"

namespace {

using daqx::mem::Block;
using daqx::mem::Ref;

std::vector<std::byte> bytes_of(const Ref& chain) {
  std::vector<std::byte> bytes;
  for (const Block* block = chain.head(); block != nullptr; block = block->next())
    bytes.insert(bytes.end(), block->data(), block->data() + block->size());
  return bytes;
}

std::vector<const Block*> blocks_of(const Ref& chain) {
  std::vector<const Block*> blocks;
  for (const Block* block = chain.head(); block != nullptr; block = block->next()) blocks.push_back(block);
  return blocks;
}

void require(bool holds) {
  if (!holds) std::abort();
}

// The frame's bytes: a header, then a payload whose table either adds up (the lengths drawn, the parts' bytes from
// the input) or is whatever the input holds.
std::vector<std::byte> frame_bytes(FuzzedDataProvider& input) {
  std::vector<std::byte> bytes(daqx::kFrameHeaderSize);
  if (input.ConsumeBool()) {
    const auto count = input.ConsumeIntegralInRange<std::uint32_t>(1, 64);
    std::vector<std::uint32_t> lengths(count);
    std::uint32_t total = 0;
    for (std::uint32_t& length : lengths) total += length = input.ConsumeIntegralInRange<std::uint32_t>(0, 512);
    bytes.resize(bytes.size() + daqx::part_table_size(count) + total);
    std::byte* table = bytes.data() + daqx::kFrameHeaderSize;
    daqx::detail::store_le<std::uint32_t>(table + daqx::part_table_offset::count, count);
    daqx::detail::store_le<std::uint32_t>(table + daqx::part_table_offset::reserved, 0);
    for (std::uint32_t i = 0; i < count; ++i)
      daqx::detail::store_le<std::uint32_t>(table + daqx::part_table_offset::lengths + 4 * i, lengths[i]);
    const std::vector<std::uint8_t> parts = input.ConsumeBytes<std::uint8_t>(total);
    if (!parts.empty()) std::memcpy(table + daqx::part_table_size(count), parts.data(), parts.size());
  } else {
    const std::vector<std::byte> payload = daqx::fuzz::remaining_bytes(input);
    bytes.insert(bytes.end(), payload.begin(), payload.end());
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);
  daqx::mem::PoolConfig config = daqx::mem::PoolConfig::geometric("fuzz/multipart", 64, 4096, 1u << 16, 1u << 21);
  config.views = input.ConsumeIntegralInRange<std::size_t>(0, 80);
  const bool shared = input.ConsumeIntegralInRange<int>(0, 7) == 0;
  const bool multipart = input.ConsumeIntegralInRange<int>(0, 15) != 0;
  std::vector<std::size_t> cuts(input.ConsumeIntegralInRange<std::size_t>(0, 12));
  for (std::size_t& cut : cuts) cut = input.ConsumeIntegralInRange<std::size_t>(0, 4096);
  const std::vector<std::byte> bytes = frame_bytes(input);

  daqx::mem::Pool pool(config, std::make_shared<daqx::mem::HeapAllocator>());
  {
    // The chain as it might arrive: blocks of the cuts' sizes (empty ones too), then of 4096 B for the rest.
    daqx::Frame frame;
    frame.header.flags = multipart ? daqx::frame_flags::multipart : 0;
    std::size_t at = 0;
    for (std::size_t i = 0; at < bytes.size(); ++i) {
      const std::size_t piece = std::min(i < cuts.size() ? cuts[i] : 4096, bytes.size() - at);
      Ref block = pool.allocate(piece);
      require(static_cast<bool>(block));
      if (piece > 0) std::memcpy(block.data(), bytes.data() + at, piece);
      at += piece;
      frame.data.append(std::move(block));
    }
    Ref other_owner = shared ? frame.data.share() : Ref();
    const std::vector<const Block*> blocks_before = blocks_of(frame.data);

    std::vector<Ref> parts(3);  // what the caller had in it goes
    const daqx::MultipartCheck check = daqx::take_parts(frame, parts);
    if (check != daqx::MultipartCheck::ok) {
      require(!daqx::to_string(check).empty());
      require(parts.empty());
      require(blocks_of(frame.data) == blocks_before);
      require(bytes_of(frame.data) == bytes);
    } else {
      require(multipart && !frame.data);
      const std::uint32_t count =
          daqx::detail::load_le<std::uint32_t>(bytes.data() + daqx::kFrameHeaderSize + daqx::part_table_offset::count);
      require(parts.size() == count);
      const std::size_t data_start = daqx::kFrameHeaderSize + daqx::part_table_size(count);
      std::size_t offset = data_start;
      for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint32_t length = daqx::detail::load_le<std::uint32_t>(
            bytes.data() + daqx::kFrameHeaderSize + daqx::part_table_offset::lengths + 4 * i);
        const std::vector<std::byte> part = bytes_of(parts[i]);
        require(part.size() == length && (length > 0) == static_cast<bool>(parts[i]));
        require(std::equal(part.begin(), part.end(), bytes.begin() + static_cast<std::ptrdiff_t>(offset)));
        offset += length;
      }
      require(offset == bytes.size());

      // Linked back into a message, they make the same bytes, and come apart into the same parts.
      require(daqx::check_parts(parts) == daqx::MultipartCheck::ok);
      std::vector<std::vector<const Block*>> part_blocks;
      for (const Ref& part : parts) part_blocks.push_back(blocks_of(part));
      Ref message = pool.allocate_chain(data_start);
      if (message) {  // the pool may be out of blocks of the table's size: nothing to link then
        std::memcpy(message.data(), bytes.data(), daqx::kFrameHeaderSize);
        daqx::write_part_table(parts, message);
        daqx::link_parts(message, parts);
        require(bytes_of(message) == bytes);
        daqx::unlink_parts(message, parts);
        require(message.total_size() == data_start);
        for (std::size_t i = 0; i < parts.size(); ++i) require(blocks_of(parts[i]) == part_blocks[i]);
      }
    }
  }
  if (pool.blocks_in_use() != 0 || pool.views_in_use() != 0) std::abort();
  return 0;
}
