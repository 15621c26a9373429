// The RU's proxy of the builder units (CMS's BUproxy): it owns all messaging to the BUs, sending each event's
// super-fragment in blocks through the readout part's FragmentPump (a queue per BU, pumped in bounded rounds),
// and drops the work of a BU that was dropped or whose connection was lost. Dispatch thread only.
#pragma once

#include <cstdint>
#include <functional>

#include "common/dispatch.hpp"
#include "common/outbox.hpp"
#include "daqx/api/application.hpp"
#include "daqx/api/counter_set.hpp"
#include "daqx/evb/protocol.hpp"
#include "readout/fragment_pump.hpp"
#include "ru/ru_configuration.hpp"

namespace daqx::evb::ru {

class BuProxy {
 public:
  // Told each BU whose connection was lost, once its work is dropped: the EvM must hear of it.
  using LostBuilder = std::function<void(Tid bu, std::uint32_t generation)>;

  BuProxy(ApplicationContext& context, const RuConfiguration& config, Outbox& outbox, LostBuilder lost_builder);

  // Reads super-fragments from source (the RU's, outliving this proxy's sending) in blocks of the configured size.
  void configure(const readout::DataSource& source) { pump_.configure(source, config_.block_size, config_.blocks_per_send); }
  // A new run of this RU: nothing queued, counters zeroed, sending allowed.
  void start();
  // Nothing more is sent; whatever was queued is forgotten.
  void stop();
  bool running() const noexcept { return pump_.running(); }
  // The EvM started run `run`: whatever was queued belongs to the old one.
  void start_run(std::uint32_t run);

  void add(const Assignment& assignment) { pump_.add(assignment); }
  // The EvM dropped bu: its work of generations below `generation` is gone.
  void drop(Tid bu, std::uint32_t generation) { pump_.drop(bu, generation); }
  void pump() { pump_.pump(); }

  std::uint64_t fragments_sent() const noexcept { return pump_.fragments_sent(); }
  std::uint64_t bytes_sent() const noexcept { return pump_.bytes_sent(); }
  // Published; read by RU::report.
  const readout::FragmentPump::Counters& sending() const noexcept { return pump_.counters(); }
  struct Counters : CounterSet {  // restarted at start()
    Counter lost_connections{*this, "lost_connections",
                             "sends to a BU that failed (connection lost), reported to the EvM"};
  };
  const Counters& counters() const noexcept { return counters_; }

 private:
  void drop_lost_builders();

  const RuConfiguration& config_;
  Outbox& outbox_;
  readout::FragmentPump pump_;
  LostBuilder lost_builder_;
  Counters counters_;
};

}  // namespace daqx::evb::ru
