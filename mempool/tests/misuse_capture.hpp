// Test helper: captures reported misuse instead of aborting, for the lifetime of the object.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "daqx/mempool/misuse.hpp"

namespace daqx::test {

class MisuseCapture {
 public:
  MisuseCapture() {
    previous_ = mem::set_misuse_handler([this](mem::Misuse kind, std::string_view detail) {
      std::lock_guard lock(mutex_);
      kinds_.push_back(kind);
      details_.emplace_back(detail);
    });
  }
  ~MisuseCapture() { mem::set_misuse_handler(previous_); }
  std::size_t count(mem::Misuse kind) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (auto k : kinds_) n += k == kind ? 1 : 0;
    return n;
  }
  std::string last_detail() const {
    std::lock_guard lock(mutex_);
    return details_.empty() ? std::string() : details_.back();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<mem::Misuse> kinds_;
  std::vector<std::string> details_;
  mem::MisuseHandler previous_;
};

}  // namespace daqx::test
