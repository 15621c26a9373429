// The completion queues one of ptofi's threads serves. Each endpoint reserves, in one of them, the entries its
// operations may complete at once: a provider whose queue has a fixed size (verbs) breaks every endpoint on a
// queue that overflows. When no queue has room for another endpoint a new one is opened, and `opened` is told
// so that its thread waits on it too: how many connections a context holds is then not bounded by one queue.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fabric.hpp"

namespace daqx::ptofi {

struct CompletionQueue {
  FidPtr<fid_cq> cq;
  std::size_t reserved = 0;  // entries the endpoints on it may need at once
};

class CompletionQueues {
 public:
  // Opens the first queue with `attributes` (later ones alike); throws with `what_failed` and libfabric's reason.
  void open(fid_domain* domain, const fi_cq_attr& attributes, std::function<void(fid_cq*)> opened,
            const std::string& what_failed);
  // A queue with room for `need` more entries, opened if none has; nullptr with the reason in error.
  CompletionQueue* reserve(std::size_t need, std::string& error);
  void release(CompletionQueue& queue, std::size_t need) noexcept;
  fid_cq* first() const noexcept { return queues_.empty() ? nullptr : queues_.front()->cq.get(); }
  std::size_t entries() const noexcept { return attributes_.size; }
  // Queues open now; any thread may read it.
  std::size_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  // Every queue's fid, then `extra` (an event queue): what fi_trywait is asked about.
  const std::vector<fid*>& wait_objects() const noexcept { return wait_objects_; }
  void add_wait_object(fid* extra) { wait_objects_.push_back(extra); }

  // Reads up to `rounds` batches from each queue: completions to `completion(entry)`, an error entry to
  // `failed(cq, error)`. Returns whether there was anything.
  template <typename Completion, typename Failed>
  bool poll(int rounds, Completion&& completion, Failed&& failed) {
    constexpr int kBatch = 32;
    bool worked = false;
    fi_cq_data_entry entries[kBatch];
    for (auto& queue : queues_) {
      fid_cq* cq = queue->cq.get();
      for (int round = 0; round < rounds; ++round) {
        const ssize_t count = fi_cq_read(cq, entries, kBatch);
        if (count > 0) {
          for (ssize_t i = 0; i < count; ++i) completion(entries[i]);
          worked = true;
          if (count < kBatch) break;
          continue;
        }
        if (count == -FI_EAVAIL) {
          fi_cq_err_entry error{};
          if (fi_cq_readerr(cq, &error, 0) > 0) failed(cq, error);
          worked = true;
          continue;
        }
        break;
      }
    }
    return worked;
  }

  void close() noexcept;

 private:
  CompletionQueue* create(std::string& error);

  fid_domain* domain_ = nullptr;
  fi_cq_attr attributes_{};
  std::function<void(fid_cq*)> opened_;
  std::vector<std::unique_ptr<CompletionQueue>> queues_;
  std::vector<fid*> wait_objects_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace daqx::ptofi
