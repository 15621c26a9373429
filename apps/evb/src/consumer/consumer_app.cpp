// evb::consumer::Consumer: a queue between the BU's dispatch thread (which must not block) and a checking worker.
#include "consumer/consumer_app.hpp"

#include "daqx/apps/text.hpp"
#include "format/superfragment_check.hpp"

namespace daqx::evb::consumer {
using apps::concatenate;
using apps::param;

std::vector<ParamSpec> Consumer::parameters() {
  return {
      param("name", ParamType::string, "events", "", "the name BUs with output consumer name in their consumer parameter"),
      param("delay", ParamType::real, "0", "us", "time spent per event (a slow downstream, to exercise throttling)", 0),
      param("verify", ParamType::boolean, "true", "", "verify every fragment's headers and CRC again"),
  };
}

Consumer::Consumer(ApplicationContext& context) : Application(context) {}

Consumer::~Consumer() {
  stop_worker();
  if (published_ != nullptr) withdraw_event_consumer(name_, published_);
}

void Consumer::configure() {
  const ParamSet& p = context().params();
  if (published_ != nullptr) withdraw_event_consumer(name_, published_);
  name_ = p.string("name");
  delay_us_ = p.real("delay");
  verify_ = p.boolean("verify");
  published_ = publish_event_consumer(name_, [this](BuiltEvent&& e) { consume(std::move(e)); });
}

void Consumer::enable() {
  run_counters_.reset();
  worker_ = context().start_worker("worker", [this](std::stop_token stop) { work(stop); });
}

void Consumer::stop() { stop_worker(); }

void Consumer::halt() {
  stop_worker();
  if (published_ != nullptr) withdraw_event_consumer(name_, published_);
  published_ = nullptr;
}

void Consumer::stop_worker() {
  if (worker_.joinable()) {
    worker_.request_stop();
    changed_.notify_all();
    worker_.join();
  }
  std::lock_guard lock(mutex_);
  queue_.clear();  // events not looked at are let go: their BU slots come back
  gauges_.queued.set(0);
}

void Consumer::consume(BuiltEvent&& event) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(event));
  gauges_.queued.set(queue_.size());
  changed_.notify_one();
}

void Consumer::work(std::stop_token stop) {
  for (;;) {
    BuiltEvent event;
    {
      std::unique_lock lock(mutex_);
      if (!changed_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
      event = std::move(queue_.front());
      queue_.pop_front();
      gauges_.queued.set(queue_.size());
    }
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(delay_us_));
    if (verify_)
      for (const BuiltFragment& f : event.fragments)
        if (!verify_superfragment(f.pieces, event.event, f.contributor, true).ok) run_counters_.check_failures.add_single_writer();
    run_counters_.events.add_single_writer();
    run_counters_.bytes.add_single_writer(event.size());
    if (event.flags & event_flags::incomplete) run_counters_.incomplete.add_single_writer();
    if (event.flags & event_flags::corrupt) run_counters_.corrupt.add_single_writer();
  }
}

void Consumer::report(MetricSink& sink) const {
  run_counters_.report(sink);
  gauges_.report(sink);
}

}  // namespace daqx::evb::consumer
