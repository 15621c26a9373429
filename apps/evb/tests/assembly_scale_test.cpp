// The BU's assembly at 512 RUs as a specification: the real BU, in one process, fed by the real fragment
// senders of the EvM and 512 RUs (synthetic data, checked by the BU), answering its requests as the EvM would.
// Every event is built exactly once and given back, none is lost, duplicated or corrupt; an RU that goes down
// mid-way makes the events after it incomplete, not lost; every block is let go at the end. The BU takes its
// blocks in batches: from batch sends of the senders, from many senders arriving together, or one at a time (a
// sender that does not batch), and builds the same events from each.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "builder_rig.hpp"

using namespace daqx;
using namespace daqx::evb;
using namespace daqx::evb::test;
using namespace daqx::evb::bu;
using namespace daqx::evb::readout;


TEST_CASE("a BU with 512 RUs builds every event exactly once, gives every batch back once, none lost, duplicated "
          "or corrupt, and lets every block go",
          "[evb][bu][scale]") {
  BuilderWithPeers rig(512);
  rig.start();
  const Outcome outcome = build(rig, 2000);
  CHECK(outcome.assigned == 2000);
  CHECK(outcome.given_back == outcome.assigned);
  CHECK(outcome.duplicates == 0);
  CHECK(outcome.incomplete == 0);
  CHECK(outcome.corrupt == 0);
  CHECK(test::metric(rig.bu, "events_built") == 2000);
  CHECK(test::metric(rig.bu, "fragments_received") == 2000.0 * 513);
  CHECK(test::metric(rig.bu, "duplicate_pieces") == 0);
  CHECK(test::metric(rig.bu, "protocol_errors") == 0);
  CHECK(test::metric(rig.bu, "malformed_frames") == 0);
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);  // the BU held the peers' blocks: all let go
}

TEST_CASE("a BU with 512 RUs, one of which goes down mid-way, builds the events after it incomplete and loses none",
          "[evb][bu][scale]") {
  BuilderWithPeers rig(512);
  rig.start();
  const std::size_t failing = 300;  // a contributor index: an RU
  const Outcome outcome = build(rig, 2000, failing, 1000);
  CHECK(outcome.assigned == 2000);
  CHECK(outcome.given_back == outcome.assigned);
  CHECK(outcome.duplicates == 0);
  CHECK(outcome.corrupt == 0);
  CHECK(outcome.incomplete == 1000);  // every event from the batch it went down in (events 1001..2000)
  CHECK(test::metric(rig.bu, "events_built") == 2000);
  CHECK(test::metric(rig.bu, "events_incomplete") == 1000);
  CHECK(test::metric(rig.bu, "protocol_errors") == 0);
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);
}

namespace {

// What the BU built and received, as its report says.
struct Built {
  Outcome outcome;
  double events = 0, bytes = 0, fragments = 0, blocks = 0, errors = 0;
  bool operator==(const Built& o) const {
    return outcome.assigned == o.outcome.assigned && outcome.given_back == o.outcome.given_back &&
           outcome.incomplete == o.outcome.incomplete && outcome.corrupt == o.outcome.corrupt &&
           outcome.duplicates == o.outcome.duplicates && events == o.events && bytes == o.bytes &&
           fragments == o.fragments && blocks == o.blocks && errors == o.errors;
  }
};

// 4 RUs with super-fragments of about 80 KB (two blocks each, ten-odd per RU and batch of 8 events), the blocks
// delivered `how`; one RU goes down mid-way.
Built build_with(Delivery how, std::size_t& largest_delivery) {
  FragmentShape shape = test::small_shape();
  shape.mean_size = 40000;
  BuilderWithPeers rig(4, how, shape);
  rig.start();
  Built b;
  b.outcome = build(rig, 160, 3, 80);
  b.events = test::metric(rig.bu, "events_built");
  b.bytes = test::metric(rig.bu, "bytes_built");
  b.fragments = test::metric(rig.bu, "fragments_received");
  b.blocks = test::metric(rig.bu, "blocks_received");
  b.errors = test::metric(rig.bu, "protocol_errors") + test::metric(rig.bu, "malformed_frames") +
             test::metric(rig.bu, "duplicate_pieces") + test::metric(rig.bu, "stale_blocks");
  CHECK(rig.bu_side.failures().empty());
  rig.bu.halt();
  CHECK(rig.peers.side().pool().stats().blocks_used() == 0);
  largest_delivery = rig.largest_delivery;
  return b;
}

}  // namespace

TEST_CASE("a BU that takes batches builds from frames that came singly (a sender that does not batch), from each "
          "sender's batch sends, and from many senders' blocks arriving together, the same events",
          "[evb][bu][batch]") {
  std::size_t largest = 0;
  const Built single = build_with(Delivery::single_frames, largest);
  CHECK(largest == 1);
  CHECK(single.outcome.assigned == 160);
  CHECK(single.outcome.given_back == 160);
  CHECK(single.outcome.incomplete == 80);  // the RU down from the batch it went down in
  CHECK(single.outcome.corrupt == 0);
  CHECK(single.events == 160);
  CHECK(single.blocks > single.fragments);  // super-fragments span blocks
  CHECK(single.errors == 0);
  const Built sender_batches = build_with(Delivery::sender_batches, largest);
  CHECK(largest > 1);
  CHECK(sender_batches == single);
  const std::size_t largest_sent = largest;
  const Built together = build_with(Delivery::all_together, largest);
  CHECK(largest > largest_sent);  // runs of several contributors in one batch
  CHECK(together == single);
}
