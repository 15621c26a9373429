// The executive as a library (daqx/executive/executive.hpp): an ExecutiveCore behind a small facade.
#include "daqx/executive/executive.hpp"

#include "executive_core.hpp"

namespace daqx {

Executive::Executive(config::Partition partition, const std::string& context_url, std::size_t inbox_capacity)
    : core_(std::make_unique<detail::ExecutiveCore>(std::move(partition), context_url, inbox_capacity)) {}

Executive::~Executive() = default;

ControlModel& Executive::control() noexcept { return *core_; }

void Executive::shutdown() { core_->shutdown(); }

}  // namespace daqx
