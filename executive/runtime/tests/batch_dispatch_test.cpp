// The host's dispatch of batches (ApplicationHost, executive/runtime/src): frames queued for an application in one
// run, for a function with a batch handler, one with a frame handler and one with none, are handed over in order,
// the batch handler getting only runs of its own function; a batch handler that throws fails the application and
// every frame of its batch goes back to the pool.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
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

constexpr Tid kTid = 5;
constexpr std::uint16_t kBatchFunction = 1;   // bound with bind_batch
constexpr std::uint16_t kSingleFunction = 2;  // bound with bind
constexpr std::uint16_t kUnboundFunction = 3; // bound to nothing: dropped, counted
constexpr std::size_t kInbox = 1024;
constexpr auto kPatience = std::chrono::seconds(10);  // for what takes microseconds: only a hung host runs into it

// What the handlers saw, written on the dispatch thread and read by the test under the lock.
struct Seen {
  struct Call {
    bool batch = false;
    std::vector<std::uint16_t> functions;
    std::vector<std::uint64_t> transactions;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Call> calls;
  std::vector<mem::Ref> kept;  // frames a batch handler moved out of its span
  std::size_t frames = 0;

  // Waits (bounded) until the handlers have seen `count` frames.
  bool frames_seen(std::size_t count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, kPatience, [&] { return frames >= count; }) && frames == count;
  }
};

// How the batch handler of a case behaves.
enum class BatchHandling { keep_first, throw_at_once };

class Recorder final : public Application {
 public:
  Recorder(ApplicationContext& context, Seen& seen, BatchHandling handling) : Application(context), seen_(seen) {
    context.bind_batch(kBatchFunction, [this, handling](std::span<Frame> frames) {
      record(true, frames);
      if (handling == BatchHandling::throw_at_once) throw std::runtime_error("a batch it cannot take");
      std::lock_guard lock(seen_.mutex);
      seen_.kept.push_back(std::move(frames.front().data));  // the rest it leaves to the host
    });
    context.bind(kSingleFunction, [this](Frame&& frame) { record(false, std::span<Frame>(&frame, 1)); });
  }

 private:
  void record(bool batch, std::span<Frame> frames) {
    Seen::Call call{batch, {}, {}};
    for (const Frame& frame : frames) {
      call.functions.push_back(frame.header.function);
      call.transactions.push_back(frame.header.transaction);
    }
    std::lock_guard lock(seen_.mutex);
    seen_.frames += frames.size();
    seen_.calls.push_back(std::move(call));
    seen_.changed.notify_all();
  }
  Seen& seen_;
};

// One ApplicationHost with what the executive gives it, its application a Recorder, dispatching on its own thread.
struct HostUnderTest {
  explicit HostUnderTest(BatchHandling handling) {
    recorder.name = "test::Recorder";
    recorder.create = [this, handling](ApplicationContext& c) { return std::make_unique<Recorder>(c, seen, handling); };
    ParamSet params(executive_application_params());
    REQUIRE(params.set("dispatch", "thread").empty());
    host = std::make_unique<ApplicationHost>(services, partition.contexts.front().applications.front(), recorder,
                                             std::move(params), kInbox, 0);
    host->start();
  }

  // Queues frames for the given functions, transaction i for the i-th, all while the dispatch thread is held in
  // a task: it then finds them queued together, as a transport's round or a batch send leaves them.
  void queue_together(const std::vector<std::uint16_t>& functions) {
    auto holding = std::make_shared<std::promise<void>>();
    auto release = std::make_shared<std::promise<void>>();
    std::future<void> held = holding->get_future();
    std::shared_future<void> released = release->get_future().share();
    REQUIRE(host->post_task([holding, released] {
      holding->set_value();
      released.wait_for(kPatience);
    }));
    REQUIRE(held.wait_for(kPatience) == std::future_status::ready);
    std::vector<FrameHeader> headers(functions.size());
    std::vector<mem::Ref> frames(functions.size());
    for (std::size_t i = 0; i < functions.size(); ++i) {
      frames[i] = host->allocate_frame(16);
      headers[i].total_length = static_cast<std::uint32_t>(frames[i].total_size());
      headers[i].target = kTid;
      headers[i].initiator = kTid;
      headers[i].function = functions[i];
      headers[i].transaction = i;
      if (frames[i]) encode_header(headers[i], frames[i].data());
    }
    const std::size_t taken = host->enqueue(headers, frames, nullptr);
    release->set_value();
    REQUIRE(std::all_of(frames.begin(), frames.end(), [](const mem::Ref& f) { return !f; }));  // all queued
    REQUIRE(taken == functions.size());
  }

  bool settled() { return host_settled(*host); }
  double metric(const std::string& name) const { return host_metric(*host, name); }

  config::Partition partition = one_context("batches", {{kTid, "test::Recorder"}});
  Policy policy;
  ThreadRegistry threads{policy};
  PoolRegistry pools{policy};
  Seen seen;  // after the pools: the frames it keeps go back before they go
  RouteTable routes;
  DeliveryState delivery;
  ContextServices services{partition, partition.contexts.front(), threads, pools, routes, delivery};
  ApplicationClass recorder;
  std::unique_ptr<ApplicationHost> host;  // last: finished (its thread joined) before the rest goes
};

// Runs of each function, as (function, length): batch runs shorter and longer than a handler call holds
// (kMaxBatchFrames), single and unbound frames between them, alone and in pairs.
std::vector<std::uint16_t> mixed_run() {
  const std::vector<std::pair<std::uint16_t, std::size_t>> runs{
      {kBatchFunction, 5},  {kSingleFunction, 1},  {kBatchFunction, 70}, {kUnboundFunction, 1},
      {kBatchFunction, 1},  {kSingleFunction, 2},  {kBatchFunction, 64}, {kUnboundFunction, 2},
      {kBatchFunction, 3},  {kSingleFunction, 1},  {kBatchFunction, 130}, {kSingleFunction, 1}};
  std::vector<std::uint16_t> functions;
  for (const auto& [function, length] : runs) functions.insert(functions.end(), length, function);
  return functions;
}

}  // namespace

TEST_CASE("the host hands a mixed run over in order: each run of a batch function to its batch handler in calls of "
          "that function only, single frames one at a time, unbound ones dropped and counted",
          "[executive][dispatch][batch]") {
  HostUnderTest t(BatchHandling::keep_first);
  const std::vector<std::uint16_t> functions = mixed_run();
  const auto count = [&](std::uint16_t f) { return static_cast<std::size_t>(std::count(functions.begin(), functions.end(), f)); };
  const std::size_t handled = count(kBatchFunction) + count(kSingleFunction);
  t.queue_together(functions);
  REQUIRE(t.seen.frames_seen(handled));
  REQUIRE(t.settled());

  std::lock_guard lock(t.seen.mutex);
  // Order: every handled frame once, as queued, the unbound ones left out.
  std::vector<std::uint64_t> expected, order;
  for (std::size_t i = 0; i < functions.size(); ++i)
    if (functions[i] != kUnboundFunction) expected.push_back(i);
  for (const Seen::Call& call : t.seen.calls) order.insert(order.end(), call.transactions.begin(), call.transactions.end());
  CHECK(order == expected);

  // Each batch call: frames of its function only, consecutive as queued (a piece of one run), at most a call's
  // worth; each single call one frame of the single function.
  std::size_t batch_calls = 0;
  for (const Seen::Call& call : t.seen.calls) {
    INFO("a call from transaction " << call.transactions.front() << " of " << call.transactions.size() << " frames");
    CHECK(!call.transactions.empty());
    if (!call.batch) {
      CHECK(call.functions == std::vector<std::uint16_t>{kSingleFunction});
      continue;
    }
    ++batch_calls;
    CHECK(call.transactions.size() <= kMaxBatchFrames);
    CHECK(std::all_of(call.functions.begin(), call.functions.end(), [](std::uint16_t f) { return f == kBatchFunction; }));
    for (std::size_t i = 1; i < call.transactions.size(); ++i) CHECK(call.transactions[i] == call.transactions[i - 1] + 1);
  }
  // Runs are not cut up further than a call's limit and the queue's rounds demand: at most one cut per run besides
  // those every kMaxBatchFrames (the frames were queued together, so a run never straddles two arrivals).
  std::size_t most_calls = 0;
  for (std::size_t i = 0; i < functions.size();) {
    std::size_t n = 0;
    while (i + n < functions.size() && functions[i + n] == functions[i]) ++n;
    if (functions[i] == kBatchFunction) most_calls += (n + kMaxBatchFrames - 1) / kMaxBatchFrames + 1;
    i += n;
  }
  CHECK(batch_calls <= most_calls);
  CHECK(batch_calls < count(kBatchFunction));  // runs went as batches, not frame by frame

  CHECK(t.metric("frames_dispatched") == static_cast<double>(handled));
  CHECK(t.metric("batches_dispatched") == static_cast<double>(batch_calls));
  CHECK(t.metric("frames_unhandled") == static_cast<double>(count(kUnboundFunction)));
  CHECK(t.metric("handler_exceptions") == 0);
  CHECK(t.host->state() == State::halted);
  // Every block back but the ones the batch handler kept (one a call), and those once it lets go.
  CHECK(t.host->pool().blocks_in_use() == t.seen.kept.size());
  t.seen.kept.clear();
  CHECK(t.host->pool().blocks_in_use() == 0);
}

TEST_CASE("a batch handler that throws fails its application with the reason, and every frame of its batch goes "
          "back to the pool",
          "[executive][dispatch][batch]") {
  HostUnderTest t(BatchHandling::throw_at_once);
  const std::vector<std::uint16_t> functions(40, kBatchFunction);
  t.queue_together(functions);
  REQUIRE(t.seen.frames_seen(functions.size()));
  REQUIRE(t.settled());
  CHECK(t.host->state() == State::failed);
  const ApplicationStatus status = t.host->status();
  CHECK_THAT(status.reason, Catch::Contains("handler for function 1 threw: a batch it cannot take"));
  CHECK(t.metric("handler_exceptions") == 1);
  {
    std::lock_guard lock(t.seen.mutex);
    CHECK(t.seen.calls.size() == 1);  // queued together: one call, which threw
    CHECK(t.seen.kept.empty());
  }
  // Nothing of a batch whose handler threw stays out: the host releases what the span still holds.
  CHECK(t.host->pool().blocks_in_use() == 0);
}

}  // namespace daqx::detail
