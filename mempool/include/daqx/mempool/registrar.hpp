// Registration hook: lets transports register each pool chunk with their network once, at creation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace daqx::mem {

// How many registrars (transports) a single pool can serve at once.
inline constexpr std::size_t kMaxRegistrars = 4;

// What a registrar keeps per chunk so that a send never has to look it up.
struct RegistrationKey {
  void* handle = nullptr;      // e.g. ibv_mr*, fid_mr*: needed to deregister
  void* descriptor = nullptr;  // e.g. fi_mr_desc(): passed with each posted buffer
  std::uint64_t key = 0;       // e.g. lkey
};

class Registrar {
 public:
  virtual ~Registrar() = default;
  virtual std::string_view name() const = 0;
  // Called once for every chunk, when it is created or when the registrar joins a pool that has it.
  // Returns an empty string on success, else the reason; a chunk that cannot be registered is not used.
  virtual std::string register_chunk(std::byte* base, std::size_t bytes, RegistrationKey& key) = 0;
  // Called once for every chunk the registrar registered, when the chunk or the registrar goes away.
  virtual void deregister_chunk(std::byte* base, std::size_t bytes, const RegistrationKey& key) noexcept = 0;
};

// One large piece of memory from an allocator, carved into blocks of one size class.
struct Chunk {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  std::array<RegistrationKey, kMaxRegistrars> keys{};
};

}  // namespace daqx::mem
