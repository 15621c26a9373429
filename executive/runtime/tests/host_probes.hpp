// What the tests of the executive's application host (ApplicationHost) share: the partition of one context they
// host applications of, and what they read of a host from outside (a metric of its status, a point after which
// its dispatch thread has handled and released what it took before).
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "application_host.hpp"  // the executive's own (executive/runtime/src)

namespace daqx::detail {

// A partition of one context holding the given applications, (TID, class name) each.
inline config::Partition one_context(const std::string& name, const std::vector<std::pair<Tid, std::string>>& apps) {
  config::Partition partition;
  partition.name = name;
  config::ContextConfig& context = partition.contexts.emplace_back();
  context.url = "http://127.0.0.1:1";
  for (const auto& [tid, class_name] : apps) {
    config::ApplicationConfig& app = context.applications.emplace_back();
    app.class_name = class_name;
    app.id = tid;
  }
  return partition;
}

inline double host_metric(const ApplicationHost& host, const std::string& name) {
  for (const Metric& m : host.status().metrics)
    if (m.name == name) return m.value;
  FAIL("no metric " << name);
  return 0;
}

// Waits (bounded) until the dispatch thread is through with what it took before: a task posted now runs once
// the frames of its earlier rounds are handled and released.
inline bool host_settled(ApplicationHost& host, std::chrono::seconds patience = std::chrono::seconds(10)) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> ran = done->get_future();
  return host.post_task([done] { done->set_value(); }) && ran.wait_for(patience) == std::future_status::ready;
}

}  // namespace daqx::detail
