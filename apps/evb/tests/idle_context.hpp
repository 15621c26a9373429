// An application context for unit tests of the EvM's proxies and policies, whose messaging the tests do not
// reach: the decisions under test only read and change the proxies' records. Anything that would send or
// allocate says so by failing the test instead of pretending to work.
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daqx/api/application.hpp"

namespace daqx::evb::test {

class IdleContext final : public ApplicationContext {
 public:
  Tid tid() const noexcept override { return 10; }
  const std::string& class_name() const noexcept override { return name_; }
  std::uint32_t instance() const noexcept override { return 0; }
  const std::string& name() const noexcept override { return name_; }
  const ParamSet& params() const noexcept override { return params_; }
  void bind(std::uint16_t, FrameHandler) override {}
  mem::Pool& pool() override { throw std::logic_error("IdleContext has no pool: the test reached messaging"); }
  mem::Ref allocate_frame(std::size_t) noexcept override {
    FAIL_CHECK("IdleContext: a frame was allocated, the test reached messaging");
    return {};
  }
  SendStatus send(Tid, std::uint16_t, std::uint64_t, mem::Ref&, std::uint8_t) noexcept override {
    FAIL_CHECK("IdleContext: a frame was sent, the test reached messaging");
    return SendStatus::no_route;
  }
  void on_send_ready(std::function<void()>) override {}
  void on_pool_available(std::function<void()>) override {}
  bool post_task(std::function<void()>) override { return false; }
  std::jthread start_worker(const std::string&, std::function<void(std::stop_token)>) override { return {}; }
  std::vector<ApplicationInfo> applications() const override { return peers; }
  std::optional<std::uint32_t> losses_allowed(const std::string& class_name) const override {
    const auto rule = expendable.find(class_name);
    return rule == expendable.end() ? std::nullopt : std::optional<std::uint32_t>(rule->second);
  }
  void fail(const std::string& reason) override { FAIL_CHECK("IdleContext: failed: " << reason); }
  void log(LogLevel, const std::string&) override {}

  // What the partition holds, for the decisions that read it: its applications and its <Expendable> rules.
  std::vector<ApplicationInfo> peers;
  std::map<std::string, std::uint32_t> expendable;  // class -> losses allowed

 private:
  std::string name_ = "evb/evm/0";
  ParamSet params_;
};

}  // namespace daqx::evb::test
