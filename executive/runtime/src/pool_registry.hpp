// The executive's memory pools: each placed by the partition's policy, registered with every transport that
// registers memory (before anyone uses it), and listed for status. Pools live until the registry goes, after
// everything that could hold a block.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daqx/executive/control.hpp"
#include "daqx/mempool/pool.hpp"
#include "threads.hpp"

namespace daqx::detail {

class PoolRegistry {
 public:
  explicit PoolRegistry(const Policy& policy) : policy_(policy) {}

  // A transport passes blocks to local peers: from now on every pool no rule places is in shared memory.
  void share_unplaced_pools() noexcept { share_unplaced_ = true; }
  mem::Pool& make(const std::string& name, const mem::PoolConfig& config);
  // A transport's registrar: every pool, those made later too, registers its memory with it. Returns its slot.
  std::size_t add_registrar(mem::Registrar& registrar);
  void remove_registrar(std::size_t slot) noexcept;
  void remove_every_registrar() noexcept;
  std::vector<PoolStatus> status() const;

 private:
  const Policy& policy_;
  bool share_unplaced_ = false;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<mem::Pool>> pools_;
  std::array<mem::Registrar*, mem::kMaxRegistrars> registrars_{};  // mutex_; slot -> registrar
};

}  // namespace daqx::detail
