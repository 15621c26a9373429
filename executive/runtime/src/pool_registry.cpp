// Pool placement by policy, registration with transports' registrars, and pool status.
#include "pool_registry.hpp"

#include <stdexcept>

#include "daqx/mempool/allocator.hpp"

namespace daqx::detail {

mem::Pool& PoolRegistry::make(const std::string& name, const mem::PoolConfig& config) {
  mem::PoolConfig named = config;
  named.name = name;
  // The partition's rules first; then where the pool's maker would like it (a transport near its device).
  std::string allocator = policy_.allocator_for_pool(name);
  const bool placed_by_rule = !allocator.empty();
  if (!placed_by_rule)
    allocator = config.preferred_numa_node >= 0 ? std::string("numa:").append(std::to_string(config.preferred_numa_node)) : std::string("heap");
  // A pool whose blocks go to other processes (ptshm's own) is in shared memory, with the pages and node asked
  // for; so is every pool no rule places when a transport passes blocks to local peers (zero copy by default).
  if (config.shared_memory || (!placed_by_rule && share_unplaced_)) allocator = mem::shared_allocator(allocator);
  auto pool = std::make_unique<mem::Pool>(named, mem::make_allocator(allocator));
  std::lock_guard lock(mutex_);
  // A pool made after a transport registered memory is registered with it too, before anyone uses it.
  for (std::size_t slot = 0; slot < registrars_.size(); ++slot)
    if (registrars_[slot] != nullptr) pool->add_registrar(*registrars_[slot], slot);
  pools_.push_back(std::move(pool));
  return *pools_.back();
}

std::size_t PoolRegistry::add_registrar(mem::Registrar& registrar) {
  std::lock_guard lock(mutex_);
  std::size_t slot = 0;
  while (slot < registrars_.size() && registrars_[slot] != nullptr) ++slot;
  if (slot == registrars_.size())
    throw std::runtime_error("more than " + std::to_string(registrars_.size()) + " transports register memory");
  std::size_t done = 0;
  try {
    for (; done < pools_.size(); ++done) pools_[done]->add_registrar(registrar, slot);
  } catch (...) {
    for (std::size_t undo = 0; undo < done; ++undo) pools_[undo]->remove_registrar(slot);
    throw;
  }
  registrars_[slot] = &registrar;
  return slot;
}

void PoolRegistry::remove_registrar(std::size_t slot) noexcept {
  std::lock_guard lock(mutex_);
  if (slot >= registrars_.size() || registrars_[slot] == nullptr) return;
  for (auto& pool : pools_) pool->remove_registrar(slot);
  registrars_[slot] = nullptr;
}

void PoolRegistry::remove_every_registrar() noexcept {
  for (std::size_t slot = 0; slot < registrars_.size(); ++slot) remove_registrar(slot);
}

std::vector<PoolStatus> PoolRegistry::status() const {
  std::lock_guard lock(mutex_);
  std::vector<PoolStatus> list;
  for (const auto& pool : pools_) {
    PoolStatus status;
    status.stats = pool->stats();
    status.numa_node = pool->allocator().numa_node();
    for (const auto& chunk : pool->chunks())
      status.chunks.push_back(ChunkView{reinterpret_cast<std::uintptr_t>(chunk.base), chunk.bytes});
    list.push_back(std::move(status));
  }
  return list;
}

}  // namespace daqx::detail
