// The RU's proxy of the builder units (CMS's BUproxy): it owns all messaging to the BUs, sending each
// event's super-fragment in blocks through a FragmentSender (a queue per BU, pumped in bounded rounds), and
// drops the work of a BU that was dropped or whose connection was lost. Dispatch thread only.
#pragma once

#include <cstdint>
#include <functional>

#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "common/dispatch.hpp"
#include "readout/fragment_sender.hpp"
#include "common/outbox.hpp"
#include "ru/ru_configuration.hpp"

namespace daqx::evb::ru {

class BuProxy {
 public:
  // Told each BU whose connection was lost, once its work is dropped: the EvM must hear of it.
  using LostBuilder = std::function<void(Tid bu, std::uint32_t generation)>;
  // Published; read by RU::report.
  struct Counters {
    Counter fragments_sent{0};
    Counter bytes_sent{0};
    Counter blocks_sent{0};
    Counter events_queued{0};
    Counter frames_waiting{0};
    Counter events_dropped{0};
    Counter lost_connections{0};
    Counter pool_waits{0};
    Counter would_blocks{0};
    Counter send_errors{0};
  };

  BuProxy(ApplicationContext& context, const RuConfiguration& config, Outbox& outbox, LostBuilder lost_builder);

  // Reads super-fragments from source (the RU's, outliving this proxy's sending) in blocks of the configured size.
  void configure(const readout::DataSource& source) { sender_.configure(source, config_.block_size); }
  // A new run of this RU: nothing queued, counters zeroed, sending allowed.
  void start();
  // Nothing more is sent; whatever was queued is forgotten.
  void stop();
  bool running() const noexcept { return running_; }
  // The EvM started run `run`: whatever was queued belongs to the old one.
  void start_run(std::uint32_t run);

  void add(const Assignment& assignment) { sender_.add(assignment); }
  // The EvM dropped bu: its work of generations below `generation` is gone.
  void drop(Tid bu, std::uint32_t generation);
  void pump();

  std::uint64_t fragments_sent() const noexcept { return sender_.fragments_sent(); }
  std::uint64_t bytes_sent() const noexcept { return sender_.bytes_sent(); }
  const Counters& counters() const noexcept { return counters_; }

 private:
  void schedule_pump();
  void drop_lost_builders();

  ApplicationContext& context_;
  const RuConfiguration& config_;
  Outbox& outbox_;
  readout::FragmentSender sender_;
  LostBuilder lost_builder_;
  bool running_ = false;
  bool pump_posted_ = false;
  Counters counters_;
};

}  // namespace daqx::evb::ru
