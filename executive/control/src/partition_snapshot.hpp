// The merged picture of a partition that PartitionView keeps: what each context last said, with rates computed
// from its counters, and the sums per kind of application. Rendered as JSON (partition_view.cpp) and as the
// page (partition_page.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace daqx::http {

inline constexpr double kNoRate = NAN;  // not known yet (one sample so far) or not reported

// A partition of more contexts than this is folded on the page: the totals per kind, then what needs attention,
// then the contexts that are fine in one closed <details> (readable at hundreds of contexts).
inline constexpr std::size_t kFoldContextsAbove = 16;


struct SubscriptionSnapshot {  // one subscription to a stream an application publishes
  std::string stream;
  std::string subscriber;
  std::string policy;
  double delivered_per_second = kNoRate;  // records sent to it
  double dropped_per_second = kNoRate;    // events its policy dropped
  double skipped_per_second = kNoRate;    // events its sampling passed over
  double delivered = 0, dropped = 0;      // since it subscribed
  double queued = 0, lag = 0;             // records waiting to be sent to it; sent and not acknowledged
};

struct ApplicationSnapshot {
  std::uint32_t tid = 0;
  std::string class_name;
  std::uint32_t instance = 0;
  std::string name;
  std::string state = "Unknown";  // as the executive said; "Unknown" while its context does not answer
  std::string reason;
  std::uint64_t run = 0;
  double events_per_second = kNoRate;  // the application's headline counters (see partition_view.cpp)
  double bytes_per_second = kNoRate;
  std::vector<std::pair<std::string, double>> rates;  // per second, of every counter without labels
  std::string attention;  // why it needs a look (Failed, not in the usual state, no progress), or empty
  std::vector<SubscriptionSnapshot> subscriptions;  // to its streams: the first few the summary lists
  std::size_t subscriptions_total = 0;
};

struct TransportSnapshot {
  std::string protocol;
  std::string endpoint;
  double frames_sent_per_second = kNoRate;
  double frames_received_per_second = kNoRate;
  double bytes_sent_per_second = kNoRate;
  double bytes_received_per_second = kNoRate;
  unsigned connections_up = 0;
  unsigned connections_total = 0;
  unsigned connections_starved = 0;  // left without receive buffers now (the transport's gauge)
  std::vector<std::string> down;  // remote addresses of the first few connections down (all: total - up)
};

struct PoolSnapshot {
  std::string name;
  std::uint64_t bytes_reserved = 0;
  std::uint64_t bytes_used = 0;  // blocks in use times their size
  std::uint64_t blocks_total = 0;
  std::uint64_t blocks_used = 0;
  std::uint64_t failed_allocations = 0;
};

struct ContextSnapshot {
  enum class Status { waiting, up, unreachable, refused };
  std::string url;
  Status status = Status::waiting;
  std::string reason;            // why unreachable or refused
  std::int64_t last_seen_ms = 0;  // Unix time of its last complete answer; 0: never
  std::uint64_t run = 0;
  double run_seconds = kNoRate;
  double uptime_seconds = kNoRate;
  std::vector<ApplicationSnapshot> applications;  // from the partition until it first answers
  std::vector<TransportSnapshot> transports;
  std::vector<PoolSnapshot> pools;
  std::string attention;  // why it needs a look (not answering, connections down or starved, ...), or empty
};

struct KindSnapshot {  // the applications of one class
  std::string class_name;
  unsigned applications = 0;
  std::map<std::string, unsigned> states;
  double events_per_second = kNoRate;  // sum over those that report it
  double bytes_per_second = kNoRate;
};

struct PartitionSnapshot {
  std::string partition;
  std::int64_t time_ms = 0;  // Unix time it was taken
  double interval_seconds = 1;
  bool polled = false;  // false until a round of polls has completed
  std::uint64_t run = 0;  // the run of the Enabled applications (the highest one, should they differ)
  double run_seconds = kNoRate;
  std::vector<ContextSnapshot> contexts;
  std::vector<KindSnapshot> kinds;
  unsigned applications = 0, failed = 0, contexts_unreachable = 0, connections_up = 0, connections_down = 0;
  unsigned connections_starved = 0;
  std::string usual_state;  // the state most applications are in
  unsigned contexts_needing_attention = 0;  // contexts with an attention of their own or of an application
  std::size_t subscriptions = 0;  // to the streams of every application, listed or not
};

// The streams section of the page lists at most this many subscriptions, those dropping first.
inline constexpr std::size_t kSubscriptionsShown = 64;

const char* to_string(ContextSnapshot::Status status);

std::string partition_json(const PartitionSnapshot& snapshot);
std::string partition_page(const PartitionSnapshot& snapshot);

}  // namespace daqx::http
