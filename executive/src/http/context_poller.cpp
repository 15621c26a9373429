// ContextPoller: a fixed set of worker threads that share the requests of one round through an index, and a
// mutex that makes rounds from several callers take turns.
#include "daqx/executive/context_poller.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace daqx {

struct ContextPoller::Impl {
  Impl(unsigned thread_count, ControlAccess access_in) : access(std::move(access_in)) {
    if (thread_count == 0) thread_count = 1;
    for (unsigned t = 0; t < thread_count; ++t) workers.emplace_back([this] { work(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      ending = true;
      stopped = true;
    }
    asked.notify_all();
    for (std::thread& worker : workers) worker.join();
  }

  HttpReply ask(const std::string& url) const {
    try {
      return ControlClient(url, timeout, access).get(path);
    } catch (const std::exception& error) {  // a URL the client cannot use
      return HttpReply{0, error.what()};
    }
  }

  void work() {
    std::unique_lock lock(mutex);
    for (;;) {
      asked.wait(lock, [&] { return ending || (urls != nullptr && next < urls->size()); });
      if (ending) return;
      const std::size_t index = next++;
      const std::string& url = (*urls)[index];
      lock.unlock();
      (*answered)(index, ask(url));  // the round's caller keeps urls, path and answered alive until all finished
      lock.lock();
      if (++finished == urls->size()) done.notify_all();
    }
  }

  const ControlAccess access;
  std::mutex turns;  // one round at a time
  std::mutex mutex;  // guards what follows
  std::condition_variable asked, done;
  const std::vector<std::string>* urls = nullptr;  // the round under way; null between rounds
  std::string path;
  std::chrono::milliseconds timeout{0};
  const Answered* answered = nullptr;
  std::size_t next = 0;      // the next of `urls` to ask
  std::size_t finished = 0;  // answered, or passed over by stop()
  bool stopped = false;
  bool ending = false;
  std::vector<std::thread> workers;
};

ContextPoller::ContextPoller(unsigned threads, ControlAccess access)
    : impl_(std::make_unique<Impl>(threads, std::move(access))) {}

ContextPoller::~ContextPoller() = default;

void ContextPoller::round(const std::vector<std::string>& urls, const std::string& path,
                          std::chrono::milliseconds timeout, const Answered& answered) {
  if (urls.empty()) return;
  std::lock_guard turn(impl_->turns);
  std::unique_lock lock(impl_->mutex);
  if (impl_->stopped) return;
  impl_->urls = &urls;
  impl_->path = path;
  impl_->timeout = timeout;
  impl_->answered = &answered;
  impl_->next = 0;
  impl_->finished = 0;
  impl_->asked.notify_all();
  impl_->done.wait(lock, [&] { return impl_->finished == urls.size(); });
  impl_->urls = nullptr;
  impl_->answered = nullptr;
}

void ContextPoller::stop() {
  std::lock_guard lock(impl_->mutex);
  impl_->stopped = true;
  if (impl_->urls == nullptr) return;
  // Those not asked yet count as finished: the round ends once the requests in flight are answered.
  impl_->finished += impl_->urls->size() - impl_->next;
  impl_->next = impl_->urls->size();
  if (impl_->finished == impl_->urls->size()) impl_->done.notify_all();
}

unsigned ContextPoller::threads() const noexcept { return static_cast<unsigned>(impl_->workers.size()); }

}  // namespace daqx
