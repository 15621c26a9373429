// evb::bu::EventStream (event_stream.hpp): the slots waiting to be offered, and the records made of views.
#include "bu/event_stream.hpp"

#include <cstring>
#include <utility>

namespace daqx::evb::bu {

EventStream::EventStream(ApplicationContext& context, SlotTable& slots, const std::vector<Tid>& contributors,
                         Offered offered)
    : context_(context), slots_(slots), contributors_(contributors), offered_(std::move(offered)), publisher_(context) {
  publisher_.on_ready([this] { offer_waiting(); });
}

void EventStream::configure(std::chrono::milliseconds batch_interval) {
  publisher_.set_batch_interval(batch_interval);
  stream_ = publisher_.offer(kEventStreamName);
}

void EventStream::take(std::uint32_t index) {
  slots_.slot(index).state = BuilderSlot::State::output;  // the output's, as far as the slot table is concerned
  waiting_.push_back(index);
  if (waiting_.size() == 1) {
    next_event_ = 0;
    offer_waiting();
  }
}

void EventStream::offer_waiting() {
  // Not again from within: a publisher may call on_ready from publish(), and the output from offered_().
  if (offering_) return;
  offering_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{offering_};
  while (!waiting_.empty()) {
    const std::uint32_t index = waiting_.front();
    const BuilderSlot& s = slots_.slot(index);
    for (; next_event_ < s.count; ++next_event_) {
      const streams::Published result = publisher_.publish(stream_, s.first_event + next_event_,
                                                           [&] { return make_record(s, next_event_); });
      if (result == streams::Published::would_block) return;  // offered again when the publisher is ready
    }
    waiting_.pop_front();
    next_event_ = 0;
    offered_(index);
  }
}

mem::Ref EventStream::make_record(const BuilderSlot& s, std::uint32_t i) {
  const EventRecordView view = built_event_record(s, i, contributors_, pieces_);
  // The assembly completes a contribution exactly when its pieces add up to its size: this does not throw.
  const std::uint64_t record_bytes = event_record_bytes(view);
  chain_.clear();
  mem::Ref head = context_.pool().allocate(event_record_head_bytes(view.fragments.size()));
  if (!head) return {};
  encode_event_record_head(view, record_bytes, head.data());
  chain_.push_back(std::move(head));
  for (const Contribution& part : s.events[i].contributions) {
    if (!part.done) continue;
    for (std::size_t p = 0; p < part.pieces.size(); ++p) {
      const std::span<const std::byte> piece = part.pieces[p];
      if (piece.empty()) continue;
      const mem::Ref& block = s.blocks[part.piece_blocks[p]];
      mem::Ref bytes = block.view(static_cast<std::size_t>(piece.data() - block.data()), piece.size());
      if (!bytes) {
        // The receive pool has no view left now (PoolConfig::views: the transport's own frames use them too):
        // this piece is copied rather than the event withheld, and counted.
        bytes = context_.pool().allocate(piece.size());
        if (!bytes) return {};
        std::memcpy(bytes.data(), piece.data(), piece.size());
        run_counters_.pieces_copied.add_single_writer();
      }
      chain_.push_back(std::move(bytes));
    }
    if (const std::uint64_t padding = padding_of(part.size); padding != 0) {
      mem::Ref zeros = context_.pool().allocate(padding);
      if (!zeros) return {};
      std::memset(zeros.data(), 0, padding);
      chain_.push_back(std::move(zeros));
    }
  }
  // Linked back to front, so that each append finds the end of its chain in one step.
  for (std::size_t k = chain_.size() - 1; k > 0; --k) chain_[k - 1].append(std::move(chain_[k]));
  return std::move(chain_.front());
}

void EventStream::release(const std::function<void(std::uint32_t index)>& finished) {
  publisher_.send_held(true);
  std::deque<std::uint32_t> left;
  left.swap(waiting_);
  for (std::size_t k = 0; k < left.size(); ++k) {
    const std::uint32_t index = left[k];
    const std::uint32_t offered = k == 0 ? next_event_ : 0;
    run_counters_.withheld.add_single_writer(slots_.slot(index).count - offered);
    finished(index);
  }
  next_event_ = 0;
}

void EventStream::halt() { publisher_.halt(); }

void EventStream::report(MetricSink& sink) const {
  run_counters_.report(sink);
  publisher_.report(sink);
}

}  // namespace daqx::evb::bu
