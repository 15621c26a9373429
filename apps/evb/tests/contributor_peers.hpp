// The EvM and the RUs as a BU sees them, for the in-process tests of the BU (and the units benchmark): each a real
// fragment sender with its own synthetic source, all sending through one recording context, so a test hands the
// BU the very blocks they would send, as coming from each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/outbox.hpp"
#include "daqx/api/application.hpp"
#include "daqx/evb/protocol.hpp"
#include "format/fragment_format.hpp"
#include "readout/fragment_pump.hpp"
#include "readout/fragment_sender.hpp"
#include "readout/synthetic_source.hpp"
#include "recording_context.hpp"

namespace daqx::evb::test {

// Small super-fragments of two sources: blocks are the point, not bytes.
inline FragmentShape small_shape() {
  FragmentShape shape;
  shape.sources = 2;
  shape.mean_size = 48;
  return shape;
}

class ContributorPeers {
 public:
  // Its blocks are what the BU receives, so their pool has views as a transport's receive pool has (pttcp's
  // number): the BU's stream sends views of them.
  static constexpr std::size_t kReceiveViews = 16384;

  // contributors: the EvM, then the RUs, as the BU lists them; every sender starts run `run`. pool_bytes: what the
  // blocks the BU holds may take.
  ContributorPeers(std::vector<Tid> contributors, std::uint32_t run, const FragmentShape& shape = small_shape(),
                   std::size_t pool_bytes = std::size_t{256} << 20)
      : contributors_(std::move(contributors)), side_(1, "peers", ParamSet{}, pool_bytes, kReceiveViews) {
    sources_.reserve(contributors_.size());
    for (Tid t : contributors_) sources_.emplace_back(shape, t);
    for (std::size_t c = 0; c < contributors_.size(); ++c) {
      senders_.push_back(std::make_unique<readout::FragmentSender>(side_, outbox_));
      senders_.back()->configure(sources_[c], 65536, readout::kDefaultBlocksPerSend);
      senders_.back()->start_run(run);
    }
  }

  const std::vector<Tid>& contributors() const noexcept { return contributors_; }
  Tid tid(std::size_t contributor) const { return contributors_.at(contributor); }
  // Where the blocks come from: its pool holds them until the BU lets them go.
  RecordingContext& side() noexcept { return side_; }

  // The blocks contributor `c` sends for the batch, in order (frames with their headers).
  std::vector<mem::Ref> blocks(std::size_t c, const Assignment& batch) {
    side_.batch_calls().clear();
    senders_.at(c)->add(batch);
    while (senders_[c]->pump() == readout::FragmentSender::Progress::more) {
    }
    std::vector<mem::Ref> out;
    for (RecordingContext::Sent& s : side_.sent()) out.push_back(std::move(s.frame));
    side_.sent().clear();
    return out;
  }
  // The same blocks as the sender's batch sends grouped them: one list per send_batch call.
  std::vector<std::vector<mem::Ref>> batches(std::size_t c, const Assignment& batch) {
    std::vector<mem::Ref> all = blocks(c, batch);
    std::vector<std::vector<mem::Ref>> out;
    std::size_t next = 0;
    for (const RecordingContext::BatchCall& call : side_.batch_calls()) {
      out.emplace_back();
      for (std::size_t i = 0; i < call.sent; ++i) out.back().push_back(std::move(all.at(next++)));
    }
    side_.batch_calls().clear();
    return out;
  }

 private:
  std::vector<Tid> contributors_;
  RecordingContext side_;
  Outbox outbox_{side_};
  std::vector<readout::SyntheticSource> sources_;
  std::vector<std::unique_ptr<readout::FragmentSender>> senders_;
};

}  // namespace daqx::evb::test
