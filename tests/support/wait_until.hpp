// Waiting for a condition with a bound: how tests wait for progress on a busy machine instead of sleeping a fixed
// time.
#pragma once

#include <chrono>
#include <functional>

namespace daqx::test {

// Polls condition every 20 ms until it holds or `limit` passes; returns its last value.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit = std::chrono::seconds(20));

}  // namespace daqx::test
