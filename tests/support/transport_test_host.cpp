// The in-process transport host of the transport tests: delivery, notices, pools and threads, recorded.
#include "transport_test_host.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <stdexcept>

#include "daqx/mempool/allocator.hpp"

namespace daqx::test {

double metric(const Transport& transport, const std::string& name) {
  MetricSink sink;
  transport.report(sink);
  for (const Metric& m : sink.metrics())
    if (m.name == name) return m.value;
  return -1;
}

mem::Ref frame_of(mem::Pool& pool, std::uint32_t bytes, std::byte fill) {
  mem::Ref frame = pool.allocate(bytes);
  REQUIRE(frame);
  std::memset(frame.data(), static_cast<int>(fill), bytes);
  FrameHeader header;
  header.total_length = bytes;
  header.target = 7;
  header.initiator = 3;
  encode_header(header, frame.data());
  return frame;
}

TransportTestHost::TransportTestHost(std::string protocol, ParamSet params)
    : params_(std::move(params)), protocol_(std::move(protocol)) {}

TransportTestHost::~TransportTestHost() {
  // The frames first: their blocks belong to the pools.
  std::lock_guard lock(mutex_);
  delivered_.clear();
}

DeliverStatus TransportTestHost::deliver(Frame&& frame, PeerId) noexcept {
  std::lock_guard lock(mutex_);
  if (busy_.load(std::memory_order_relaxed)) {
    ++busy_answers_;
    return DeliverStatus::busy;
  }
  delivered_.push_back(std::move(frame));
  return DeliverStatus::accepted;
}

void TransportTestHost::on_deliver_ready(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  deliver_ready_ = std::move(callback);
}

void TransportTestHost::send_ready(PeerId peer) noexcept {
  std::lock_guard lock(mutex_);
  ++send_ready_[peer];
}

void TransportTestHost::connection_changed(PeerId peer, bool up, const std::string& reason) {
  std::lock_guard lock(mutex_);
  connection_changes_.push_back({peer, up, reason});
}

mem::Pool& TransportTestHost::make_pool(const std::string& name, const mem::PoolConfig& config) {
  mem::PoolConfig named = config;
  named.name = "pt/" + protocol_ + "/" + name;
  return keep_pool(std::move(named), config.shared_memory ? mem::shared_allocator("heap") : "heap");
}

std::jthread TransportTestHost::start_thread(const std::string&, std::function<void(std::stop_token)> body) {
  ++threads_running_;
  return std::jthread([this, body = std::move(body)](std::stop_token stop) {
    body(std::move(stop));
    --threads_running_;
  });
}

void TransportTestHost::log(LogLevel, const std::string& message) {
  std::lock_guard lock(mutex_);
  logs_.append(message).append("\n");
}

std::size_t TransportTestHost::register_memory(mem::Registrar& registrar) {
  std::lock_guard lock(mutex_);
  // As the executive does: the first free slot, the same in every pool, those there now and those made later.
  std::size_t slot = 0;
  while (slot < registrars_.size() && registrars_[slot] != nullptr) ++slot;
  if (slot == registrars_.size()) throw std::runtime_error("every registrar slot is taken");
  for (auto& pool : pools_) pool->add_registrar(registrar, slot);
  registrars_[slot] = &registrar;
  return slot;
}

void TransportTestHost::deregister_memory(std::size_t slot) noexcept {
  std::lock_guard lock(mutex_);
  if (slot >= registrars_.size() || registrars_[slot] == nullptr) return;
  for (auto& pool : pools_) pool->remove_registrar(slot);
  registrars_[slot] = nullptr;
}

mem::Pool& TransportTestHost::add_pool(const std::string& name, mem::PoolConfig config, const std::string& allocator) {
  config.name = name;
  return keep_pool(std::move(config), allocator);
}

mem::Pool& TransportTestHost::keep_pool(mem::PoolConfig config, const std::string& allocator) {
  auto pool = std::make_unique<mem::Pool>(config, mem::make_allocator(allocator));
  std::lock_guard lock(mutex_);
  for (std::size_t slot = 0; slot < registrars_.size(); ++slot)
    if (registrars_[slot] != nullptr) pool->add_registrar(*registrars_[slot], slot);
  pools_.push_back(std::move(pool));
  return *pools_.back();
}

bool TransportTestHost::resume_delivery() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mutex_);
    callback = deliver_ready_;
  }
  if (!callback) return false;
  callback();  // outside the lock: the transport may deliver from its thread meanwhile
  return true;
}

Frame TransportTestHost::take(std::size_t i) {
  std::lock_guard lock(mutex_);
  return std::move(delivered_.at(i));
}

void TransportTestHost::release_delivered() {
  std::vector<Frame> frames;
  {
    std::lock_guard lock(mutex_);
    for (Frame& frame : delivered_) frames.push_back(std::move(frame));
  }
  // Released outside the lock: a release may make the transport deliver again (pool blocks back).
}

std::size_t TransportTestHost::delivered() {
  std::lock_guard lock(mutex_);
  return delivered_.size();
}

std::size_t TransportTestHost::busy_answers() {
  std::lock_guard lock(mutex_);
  return busy_answers_;
}

std::size_t TransportTestHost::send_ready_count(PeerId peer) {
  std::lock_guard lock(mutex_);
  const auto found = send_ready_.find(peer);
  return found == send_ready_.end() ? 0 : found->second;
}

std::vector<TransportTestHost::ConnectionChange> TransportTestHost::connection_changes() {
  std::lock_guard lock(mutex_);
  return connection_changes_;
}

std::string TransportTestHost::logs() {
  std::lock_guard lock(mutex_);
  return logs_;
}

mem::Pool* TransportTestHost::pool(const std::string& name) {
  std::lock_guard lock(mutex_);
  for (auto& pool : pools_)
    if (pool->name() == name) return pool.get();
  return nullptr;
}

std::size_t TransportTestHost::blocks_in_use() { return blocks_in_use(""); }  // every name ends in ""

std::size_t TransportTestHost::blocks_in_use(std::string_view suffix) {
  std::lock_guard lock(mutex_);
  std::size_t blocks = 0;
  for (auto& pool : pools_) {
    const std::string& name = pool->name();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      blocks += pool->blocks_in_use() + pool->views_in_use();
  }
  return blocks;
}

std::string TransportTestHost::pools_in_use() {
  std::lock_guard lock(mutex_);
  std::string text;
  for (auto& pool : pools_) {
    const std::size_t out = pool->blocks_in_use() + pool->views_in_use();
    if (out == 0) continue;
    if (!text.empty()) text.append(", ");
    text.append(pool->name()).append(" ").append(std::to_string(out));
  }
  return text.empty() ? "none" : text;
}

}  // namespace daqx::test
