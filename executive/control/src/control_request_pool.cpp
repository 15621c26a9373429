// ControlRequestPool: a queue of calls (each a list of requests and whom to tell the answers) shared by a fixed set
// of workers. A worker takes requests while it has fewer than its share of the fan-out in flight, sends them, and
// waits with poll() on their sockets and on its own eventfd (rung when requests come, so that a worker waiting for
// slow answers takes new requests at once); it reads the answer of every socket that can be read, and answers a
// request whose deadline passed with status 0.
#include "daqx/control/control_request_pool.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace daqx {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds deadline) {
  const long long ms = deadline.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000);
  std::string text = std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  while (text.back() == '0') text.pop_back();
  return text;
}

}  // namespace

struct ControlRequestPool::Impl {
  struct Call {  // one run(): lives on its caller's stack until every request is finished
    const std::vector<ControlRequest>* requests;
    const Answered* answered;
    std::size_t next = 0;      // the next request to send
    std::size_t finished = 0;  // answered, or passed over when stopped
  };

  struct InFlight {
    Call* call;
    std::size_t index;
    SentControlRequest sent;
    Clock::time_point deadline;
  };

  struct Worker {
    int wake = -1;  // eventfd: rung when requests come or the pool ends
    std::thread thread;
  };

  Impl(unsigned fanout_in, unsigned thread_count, ControlAccess access_in)
      : access(std::move(access_in)), fanout(std::max(fanout_in, 1u)) {
    thread_count = std::clamp(thread_count, 1u, fanout);
    per_worker = (fanout + thread_count - 1) / thread_count;
    workers.resize(thread_count);
    for (Worker& worker : workers) {
      worker.wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (worker.wake < 0) {
        const int error = errno;
        close_all();
        throw std::system_error(error, std::generic_category(), "control request pool: eventfd");
      }
    }
    for (Worker& worker : workers) worker.thread = std::thread([this, &worker] { work(worker.wake); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      ending = true;
    }
    ring_all();
    for (Worker& worker : workers) worker.thread.join();
    close_all();
  }

  void close_all() {
    for (Worker& worker : workers)
      if (worker.wake >= 0) ::close(worker.wake);
  }

  void ring_all() {
    for (const Worker& worker : workers) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t written = ::write(worker.wake, &one, sizeof one);  // full counter: rung already
    }
  }

  // Under `mutex`: the next request not sent yet, first call first.
  bool take(Call*& call, std::size_t& index) {
    while (!calls.empty() && calls.front()->next >= calls.front()->requests->size()) calls.pop_front();
    if (calls.empty()) return false;
    call = calls.front();
    index = call->next++;
    return true;
  }

  void finish(Call& call, std::size_t index, HttpReply reply) {
    (*call.answered)(index, std::move(reply));  // the caller keeps the call alive until all are finished
    std::lock_guard lock(mutex);
    if (++call.finished == call.requests->size()) done.notify_all();
  }

  void send(Call& call, std::size_t index, std::vector<InFlight>& flight) {
    const ControlRequest& request = (*call.requests)[index];
    try {
      const ControlClient client(request.url, request.deadline, access);
      const Clock::time_point deadline = Clock::now() + request.deadline;
      SentControlRequest sent = client.send(request.method, request.path, request.body);
      if (sent.socket_fd() < 0)
        finish(call, index, sent.failure());
      else
        flight.push_back(InFlight{&call, index, std::move(sent), deadline});
    } catch (const std::exception& error) {  // not a context URL
      finish(call, index, HttpReply{0, error.what()});
    }
  }

  void work(int wake) {
    std::vector<InFlight> flight;
    std::vector<pollfd> fds;
    for (;;) {
      std::vector<std::pair<Call*, std::size_t>> taken;
      {
        std::lock_guard lock(mutex);
        if (ending && flight.empty()) return;
        Call* call = nullptr;
        std::size_t index = 0;
        while (flight.size() + taken.size() < per_worker && take(call, index)) taken.emplace_back(call, index);
      }
      for (const auto& [call, index] : taken) send(*call, index, flight);

      // Wait for the first of: an answer, the nearest deadline, a ring.
      fds.assign(1, pollfd{wake, POLLIN, 0});
      Clock::time_point nearest = Clock::time_point::max();
      for (const InFlight& request : flight) {
        fds.push_back(pollfd{request.sent.socket_fd(), POLLIN, 0});
        nearest = std::min(nearest, request.deadline);
      }
      int timeout_ms = -1;
      if (!taken.empty() && flight.size() < per_worker) {
        timeout_ms = 0;  // some failed at once: there may be more to take, whose ring was read already
      } else if (!flight.empty()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(nearest - Clock::now()).count();
        timeout_ms = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
      }
      const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
      if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
        std::uint64_t rings = 0;
        [[maybe_unused]] const ssize_t got = ::read(wake, &rings, sizeof rings);
      }

      // Read what can be read, answer what is late; keep the rest in order.
      const Clock::time_point now = Clock::now();
      std::vector<InFlight> waiting;
      waiting.reserve(flight.size());
      for (std::size_t i = 0; i < flight.size(); ++i) {
        InFlight& request = flight[i];
        if (ready > 0 && fds[i + 1].revents != 0) {
          const auto left = std::max<std::chrono::milliseconds>(
              std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(request.deadline - now));
          finish(*request.call, request.index, request.sent.receive(left));
        } else if (now >= request.deadline) {
          const std::chrono::milliseconds deadline = (*request.call->requests)[request.index].deadline;
          finish(*request.call, request.index,
                 HttpReply{0, "no answer within " + seconds_text(deadline) + " s", true, true});
        } else {
          waiting.push_back(std::move(request));
        }
      }
      flight = std::move(waiting);
    }
  }

  const ControlAccess access;
  const unsigned fanout;
  unsigned per_worker = 1;  // requests in flight at most per worker
  std::mutex mutex;         // guards what follows
  std::condition_variable done;
  std::deque<Call*> calls;  // calls with requests not sent yet, first come first
  bool ending = false;
  std::vector<Worker> workers;
};

ControlRequestPool::ControlRequestPool(unsigned fanout, unsigned threads, ControlAccess access)
    : impl_(std::make_unique<Impl>(fanout, threads, std::move(access))) {}

ControlRequestPool::~ControlRequestPool() = default;

void ControlRequestPool::run(const std::vector<ControlRequest>& requests, const Answered& answered,
                             std::stop_token stop) {
  if (requests.empty() || stop.stop_requested()) return;
  Impl::Call call{&requests, &answered};
  std::unique_lock lock(impl_->mutex);
  impl_->calls.push_back(&call);
  lock.unlock();
  impl_->ring_all();
  // Stopped: those not sent yet count as finished; the call ends once the requests in flight are answered.
  const std::stop_callback on_stop(stop, [&] {
    std::lock_guard guard(impl_->mutex);
    call.finished += requests.size() - call.next;
    call.next = requests.size();
    std::erase(impl_->calls, &call);
    if (call.finished == requests.size()) impl_->done.notify_all();
  });
  lock.lock();
  impl_->done.wait(lock, [&] { return call.finished == requests.size(); });
  std::erase(impl_->calls, &call);
}

std::vector<HttpReply> ControlRequestPool::send(const std::vector<ControlRequest>& requests) {
  std::vector<HttpReply> replies(requests.size());
  run(requests, [&](std::size_t index, HttpReply reply) { replies[index] = std::move(reply); });
  return replies;
}

unsigned ControlRequestPool::threads() const noexcept { return static_cast<unsigned>(impl_->workers.size()); }
unsigned ControlRequestPool::fanout() const noexcept { return impl_->fanout; }

}  // namespace daqx
