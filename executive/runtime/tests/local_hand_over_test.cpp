// Frames a local application's worker thread sends (ApplicationHost, executive/runtime/src): a target with inline
// dispatch has them handled on that worker when it is idle, in order with those it had to queue while busy; what
// its handlers send back is queued (handlers never nest), and a target that dispatches on its thread gets them
// there. Every block goes back to its pool.
#include <catch2/catch.hpp>

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "application_host.hpp"  // the executive's own (executive/runtime/src)
#include "context_services.hpp"
#include "host_probes.hpp"
#include "module_loader.hpp"
#include "pool_registry.hpp"
#include "route_table.hpp"
#include "threads.hpp"
#include "daqx/api/batch.hpp"
#include "daqx/api/module.hpp"

namespace daqx::detail {
namespace {

constexpr Tid kEcho = 5;                // takes data (function 1), answers every tenth frame (function 2)
constexpr Tid kOrigin = 6;              // its worker sends the data; it takes the answers
constexpr std::uint16_t kData = 1;
constexpr std::uint16_t kAnswer = 2;
constexpr std::size_t kInbox = 1024;
constexpr auto kPatience = std::chrono::seconds(10);  // for what takes microseconds: only a hung host runs into it

// Who handled what, in order: written by handlers, read by the test under the lock.
struct Seen {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::uint64_t> data;  // transactions, in the order handled
  std::vector<pid_t> data_threads;
  std::vector<pid_t> answer_threads;
  std::size_t failures = 0;  // sends or allocations that failed on a handler's or the worker's thread

  bool wait(std::size_t data_count, std::size_t answer_count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, kPatience, [&] {
      return data.size() >= data_count && answer_threads.size() >= answer_count;
    });
  }
};

class Echo final : public Application {
 public:
  Echo(ApplicationContext& context, Seen& seen) : Application(context), seen_(seen) {
    context.bind_batch(kData, [this](std::span<Frame> frames) {
      for (Frame& frame : frames) {
        {
          std::lock_guard lock(seen_.mutex);
          seen_.data.push_back(frame.header.transaction);
          seen_.data_threads.push_back(gettid());
          seen_.changed.notify_all();
        }
        if (frame.header.transaction % 10 != 9) continue;
        mem::Ref answer = this->context().allocate_frame(8);
        if (this->context().send(frame.header.initiator, kAnswer, frame.header.transaction, answer, 0) !=
            SendStatus::ok) {
          std::lock_guard lock(seen_.mutex);
          ++seen_.failures;
        }
      }
    });
  }

 private:
  Seen& seen_;
};

class Origin final : public Application {
 public:
  Origin(ApplicationContext& context, Seen& seen) : Application(context), seen_(seen) {
    context.bind(kAnswer, [this](Frame&&) {
      std::lock_guard lock(seen_.mutex);
      seen_.answer_threads.push_back(gettid());
      seen_.changed.notify_all();
    });
  }

 private:
  Seen& seen_;
};

// The two hosts of one executive, routed to each other; the Origin's worker runs what the test gives it.
struct Pair {
  explicit Pair(const std::string& echo_dispatch) {
    echo_class.name = "test::Echo";
    echo_class.create = [this](ApplicationContext& c) { return std::make_unique<Echo>(c, seen); };
    origin_class.name = "test::Origin";
    origin_class.create = [this](ApplicationContext& c) { return std::make_unique<Origin>(c, seen); };
    const auto params = [](const std::string& dispatch) {
      ParamSet set(executive_application_params());
      REQUIRE(set.set("dispatch", dispatch).empty());
      return set;
    };
    const auto& apps = partition.contexts.front().applications;
    echo = std::make_unique<ApplicationHost>(services, apps[0], echo_class, params(echo_dispatch), kInbox, 0);
    // Inline too: its answers, sent by the Echo's handlers, must still not be handled where those run.
    origin = std::make_unique<ApplicationHost>(services, apps[1], origin_class, params("inline"), kInbox, 0);
    routes.add_local(kEcho, *echo);
    routes.add_local(kOrigin, *origin);
    echo->start();
    origin->start();
    worker = origin->start_worker("worker", [this](std::stop_token stop) {
      worker_thread = gettid();
      std::unique_lock lock(job_mutex);
      while (!stop.stop_requested()) {
        if (!job) {
          job_changed.wait_for(lock, std::chrono::milliseconds(10));
          continue;
        }
        std::function<void()> run = std::move(job);
        job = nullptr;
        lock.unlock();
        run();
        lock.lock();
        job_done = true;
        job_changed.notify_all();
      }
    });
  }

  ~Pair() {
    worker.request_stop();
    worker.join();
  }

  // On the worker: frames [first, first + count) to the Echo, in batches of `batch` (1: one send() each).
  void send_from_worker(std::uint64_t first, std::size_t count, std::size_t batch) {
    std::unique_lock lock(job_mutex);
    job_done = false;
    job = [this, first, count, batch] {
      for (std::uint64_t t = first; t < first + count;) {
        const std::size_t n = std::min<std::size_t>(batch, first + count - t);
        std::vector<mem::Ref> refs(n);
        bool ok = origin->allocate_frames(16, refs) == n;
        if (ok && n == 1) {
          ok = origin->send(kEcho, kData, t, refs[0], 0) == SendStatus::ok;
        } else if (ok) {
          std::vector<OutgoingFrame> out(n);
          for (std::size_t i = 0; i < n; ++i) out[i] = OutgoingFrame{kEcho, kData, t + i, std::move(refs[i]), 0};
          ok = origin->send_batch(out).sent == n;
        }
        if (!ok) {
          std::lock_guard seen_lock(seen.mutex);
          ++seen.failures;
        }
        t += n;
      }
    };
    job_changed.notify_all();
    REQUIRE(job_changed.wait_for(lock, kPatience, [this] { return job_done; }));
  }

  bool settled() { return host_settled(*echo) && host_settled(*origin); }

  config::Partition partition = one_context("hand-over", {{kEcho, "test::Echo"}, {kOrigin, "test::Origin"}});
  Policy policy;
  ThreadRegistry threads{policy};
  PoolRegistry pools{policy};
  Seen seen;
  RouteTable routes;
  DeliveryState delivery;
  ContextServices services{partition, partition.contexts.front(), threads, pools, routes, delivery};
  ApplicationClass echo_class;
  ApplicationClass origin_class;
  std::unique_ptr<ApplicationHost> echo;  // after what they use: finished before it goes
  std::unique_ptr<ApplicationHost> origin;
  std::mutex job_mutex;
  std::condition_variable job_changed;
  std::function<void()> job;
  bool job_done = false;
  pid_t worker_thread = 0;
  std::jthread worker;  // last: stopped first
};

}  // namespace

TEST_CASE("a worker's frames to an idle local application with inline dispatch are handled on the worker, in order "
          "with those queued while it was busy, and its handlers' answers are queued, never handled there",
          "[executive][dispatch][local]") {
  Pair p("inline");
  p.send_from_worker(0, 40, 8);  // idle: handled in place
  p.send_from_worker(40, 3, 1);
  REQUIRE(p.seen.wait(43, 4));

  // Busy (a task holds its handlers): the next frames queue; once it is free again, frames sent meanwhile must not
  // overtake them.
  auto holding = std::make_shared<std::promise<void>>();
  auto release = std::make_shared<std::promise<void>>();
  std::future<void> held = holding->get_future();
  std::shared_future<void> released = release->get_future().share();
  REQUIRE(p.echo->post_task([holding, released] {
    holding->set_value();
    released.wait_for(kPatience);
  }));
  REQUIRE(held.wait_for(kPatience) == std::future_status::ready);
  p.send_from_worker(43, 57, 16);
  release->set_value();
  p.send_from_worker(100, 100, 16);
  REQUIRE(p.seen.wait(200, 20));
  REQUIRE(p.settled());

  std::lock_guard lock(p.seen.mutex);
  CHECK(p.seen.failures == 0);
  std::vector<std::uint64_t> expected(200);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i;
  CHECK(p.seen.data == expected);
  // Idle: in place. The Echo's dispatch thread looks at its queues now and then (it polls briefly after a wake-up),
  // and a send that finds it there queues instead: on a busy machine some of these may, so at least one, not all.
  const auto on_worker = [&](std::size_t from, std::size_t to) {
    return static_cast<double>(std::count(p.seen.data_threads.begin() + static_cast<std::ptrdiff_t>(from),
                                          p.seen.data_threads.begin() + static_cast<std::ptrdiff_t>(to), p.worker_thread));
  };
  CHECK(on_worker(0, 43) >= 1);
  CHECK(on_worker(43, 100) == 0);  // queued while busy
  for (pid_t thread : p.seen.answer_threads) CHECK(thread != p.worker_thread);  // never nested in a handler
  // What ran on the worker is exactly what the host counts as handled in place (the Echo has no transport).
  CHECK(host_metric(*p.echo, "frames_dispatched_inline") == on_worker(0, 200));
  CHECK(host_metric(*p.echo, "frames_dispatched") == 200);
  CHECK(host_metric(*p.origin, "frames_dispatched_inline") == 0);
  CHECK(p.echo->pool().blocks_in_use() == 0);
  CHECK(p.origin->pool().blocks_in_use() == 0);
}

TEST_CASE("a local application that dispatches on its own thread gets a worker's frames there",
          "[executive][dispatch][local]") {
  Pair p("thread");
  p.send_from_worker(0, 50, 10);
  REQUIRE(p.seen.wait(50, 5));
  REQUIRE(p.settled());
  std::lock_guard lock(p.seen.mutex);
  CHECK(p.seen.failures == 0);
  for (pid_t thread : p.seen.data_threads) CHECK(thread != p.worker_thread);
  CHECK(host_metric(*p.echo, "frames_dispatched_inline") == 0);
  CHECK(host_metric(*p.echo, "frames_dispatched") == 50);
}

}  // namespace daqx::detail
