// The soak run (scripts/dev.sh soak, docs/operations.md "Soak"): the 4x4 event builder in network namespaces with
// every event checked, every unit's RSS, threads, descriptors, pools and rates sampled into CSV, and a verdict on
// leaks: pools and descriptors that do not come back, threads or descriptors that climb, RSS past a bound.
#include <dirent.h>
#include <unistd.h>

#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "../support/checked_evb_partition.hpp"
#include "../support/executive_metrics.hpp"
#include "../support/executive_process.hpp"
#include "../support/netns.hpp"
#include "../support/process.hpp"

namespace daqx::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kRus = 4, kBus = 4, kHosts = 1 + kRus + kBus;  // the generator: EvM on host 0, RUs 1..4, BUs 5..8
constexpr std::uint16_t kControlPort = 39700;
// RSS a unit may gain after warm-up over the whole run (fitted line, end minus start): allocator noise and
// caches stay well below it, a leak of one block per event (thousands of events/s) goes past it in seconds.
constexpr double kRssGrowthBound = 8.0 * 1024 * 1024;
constexpr auto kStallLimit = 60s;       // the run fails when the EvM assigns no event for this long
constexpr auto kComeBackLimit = 20s;    // how long pools, descriptors and threads may take to come back after the stop
constexpr double kControlServerThreads = 16;  // the most the control server may start (HttpServer's pool)

struct Options {
  double minutes = 30;
  std::string out = "build/soak";
  int interval_seconds = 10;
};

struct Unit {
  std::string name;  // EvM, RU0.., BU0..
  int host = 0;
  std::uint32_t tid = 0;
  std::string events_counter, bytes_counter;  // what its rates are made of (bytes empty: none)
};

struct Pool {
  double blocks_used = 0, bytes_reserved = 0;
};

struct Sample {
  double t = 0;  // seconds since the run was enabled
  double rss = 0, fds = 0;
  // Every thread daqx starts has a name of its own (pt/tcp/recv, evb/ru/0/ticker); the unnamed ones are the main
  // thread and the control server's, which come and go on demand (a Poco pool of at most 16 ended after 60 s
  // idle): counted apart, held only to that bound, so that the named ones can be held to "never more".
  double threads = 0, unnamed_threads = 0;
  std::map<std::string, Pool> pools;
  double events = 0, bytes = 0;        // the unit's counters
  double event_rate = 0, byte_rate = 0;  // per second since the previous sample
  std::string state;
};

std::vector<Unit> evb_units() {
  std::vector<Unit> units{{"EvM", 0, 10, "events_assigned", ""}};
  for (int r = 0; r < kRus; ++r)
    units.push_back(
        {"RU" + std::to_string(r), 1 + r, 100 + static_cast<std::uint32_t>(r), "fragments_sent", "bytes_sent"});
  for (int b = 0; b < kBus; ++b)
    units.push_back(
        {"BU" + std::to_string(b), 1 + kRus + b, 200 + static_cast<std::uint32_t>(b), "events_built", "bytes_built"});
  return units;
}

double entries(const std::string& directory) {
  DIR* d = opendir(directory.c_str());
  if (d == nullptr) return std::nan("");
  double n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

// Threads of the process: {named ones, unnamed ones (the process's own name)}.
std::pair<double, double> thread_counts(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  const std::string process_name = read_text("/proc/" + std::to_string(pid) + "/comm");
  std::pair<double, double> counts{0, 0};
  DIR* d = opendir(tasks.c_str());
  if (d == nullptr) return {std::nan(""), std::nan("")};
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string name = read_text(tasks + "/" + e->d_name + "/comm");
    (name == process_name ? counts.second : counts.first) += 1;
  }
  closedir(d);
  return counts;
}

double rss_bytes(pid_t pid) {
  std::istringstream status(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) * 1024;
  return std::nan("");
}

// What each descriptor of the process is ("3 socket:[1234], 4 /dev/null, ..."), for a report.
std::string descriptor_targets(pid_t pid) {
  const std::string directory = "/proc/" + std::to_string(pid) + "/fd";
  std::string text;
  DIR* d = opendir(directory.c_str());
  if (d == nullptr) return "(unreadable)";
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[512];
    const ssize_t n = readlink((directory + "/" + e->d_name).c_str(), target, sizeof target - 1);
    text.append(text.empty() ? "" : ", ").append(e->d_name).append(" ");
    text.append(target, n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  closedir(d);
  return text;
}

std::map<std::string, Pool> pools_of(const ExecutiveProcess& executive) {
  std::map<std::string, Pool> pools;
  HttpReply reply = executive.get("/api/pools");
  if (reply.status != 200) return pools;
  auto array = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
  for (std::size_t i = 0; array && i < array->size(); ++i) {
    Poco::JSON::Object::Ptr p = array->getObject(static_cast<unsigned>(i));
    Pool& pool = pools[p->getValue<std::string>("name")];
    pool.bytes_reserved = p->getValue<double>("bytes_reserved");
    Poco::JSON::Array::Ptr classes = p->getArray("classes");
    for (std::size_t c = 0; classes && c < classes->size(); ++c)
      pool.blocks_used += classes->getObject(static_cast<unsigned>(c))->getValue<double>("blocks_used");
  }
  return pools;
}

double metric_of(const Poco::JSON::Object::Ptr& application, const std::string& name) {
  if (!application || name.empty()) return 0;
  Poco::JSON::Array::Ptr metrics = application->getArray("metrics");
  for (std::size_t i = 0; metrics && i < metrics->size(); ++i) {
    Poco::JSON::Object::Ptr m = metrics->getObject(static_cast<unsigned>(i));
    if (m->getValue<std::string>("name") == name) return m->getValue<double>("value");
  }
  return std::nan("");
}

Sample take_sample(const Unit& unit, ExecutiveProcess& executive, double t) {
  Sample s;
  s.t = t;
  const std::string proc = "/proc/" + std::to_string(executive.pid());
  s.rss = rss_bytes(executive.pid());
  std::tie(s.threads, s.unnamed_threads) = thread_counts(executive.pid());
  s.fds = entries(proc + "/fd");
  try {
    s.pools = pools_of(executive);
    Poco::JSON::Object::Ptr application = executive.application(unit.tid);
    s.state = application ? application->getValue<std::string>("state") : "unreachable";
    s.events = metric_of(application, unit.events_counter);
    s.bytes = metric_of(application, unit.bytes_counter);
  } catch (const std::exception& e) {
    s.state = std::string("unreadable: ") + e.what();
  }
  return s;
}

double blocks_in_use(const Sample& s) {
  double n = 0;
  for (const auto& [name, pool] : s.pools) n += pool.blocks_used;
  return n;
}

double bytes_reserved(const Sample& s) {
  double n = 0;
  for (const auto& [name, pool] : s.pools) n += pool.bytes_reserved;
  return n;
}

// Least-squares slope of y over t, per second (0 with fewer than two points).
template <typename Value>
double slope(const std::vector<Sample>& samples, Value value) {
  const double n = static_cast<double>(samples.size());
  if (n < 2) return 0;
  double st = 0, sy = 0, stt = 0, sty = 0;
  for (const Sample& s : samples) {
    const double y = value(s);
    st += s.t, sy += y, stt += s.t * s.t, sty += s.t * y;
  }
  const double d = n * stt - st * st;
  return d == 0 ? 0 : (n * sty - st * sy) / d;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--minutes") o.minutes = std::stod(next());
    else if (a == "--out") o.out = next();
    else if (a == "--interval") o.interval_seconds = std::stoi(next());
    else throw std::runtime_error("unknown option " + a + " (--minutes M, --out DIR, --interval SECONDS)");
  }
  if (o.minutes <= 0 || o.interval_seconds <= 0) throw std::runtime_error("--minutes and --interval must be positive");
  return o;
}

class Soak {
 public:
  explicit Soak(Options options) : options_(std::move(options)), units_(evb_units()) {}

  int run() {
    std::filesystem::create_directories(options_.out);
    cluster_ = std::make_unique<VirtualCluster>(kHosts);
    // Checks on: the RUs write a pattern into every fragment, the BUs verify it and each fragment's CRC.
    const std::string partition = checked_evb_partition(*cluster_, kRus, kBus, kControlPort, "evb-4x4-soak");
    for (const Unit& u : units_) executives_.push_back(cluster_->start_executive(u.host, partition, kControlPort));
    for (std::size_t i = 0; i < units_.size(); ++i)
      if (!executives_[i]->wait_ready()) return fail_now(units_[i].name + ": its executive did not start");
    // The partition's order: BUs and RUs first, the EvM last; stop in reverse.
    std::vector<std::size_t> order;
    for (std::size_t i = 1; i < units_.size(); ++i) order.push_back(units_.size() - i);
    order.push_back(0);
    for (std::size_t i : order)
      if (executives_[i]->transition("configure").status != 200)
        return fail_now(units_[i].name + ": configure refused");
    for (std::size_t i = 0; i < units_.size(); ++i) at_rest_.push_back(pools_of(*executives_[i]));
    for (std::size_t i : order)
      if (executives_[i]->transition("enable").status != 200) return fail_now(units_[i].name + ": enable refused");
    if (!executives_[0]->wait_metric(10, "events_completed", 1, 60s)) return fail_now("no event completed in 60 s");

    sample_run();
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      if (HttpReply r = executives_[*it]->transition("stop"); r.status != 200)
        failures_.push_back(units_[*it].name + ": stop answered " + std::to_string(r.status) + " " + r.body);
    check_after_stop();
    check_events();
    report();
    for (std::size_t i = 0; i < units_.size(); ++i)
      if (int code = executives_[i]->stop(); code != 0)
        failures_.push_back(units_[i].name + ": its executive exited with " + std::to_string(code));
    return verdict();
  }

 private:
  int fail_now(const std::string& reason) {
    failures_.push_back(reason);
    return verdict();
  }

  int verdict() const {
    if (failures_.empty()) {
      std::printf("soak: PASS\n");
      return 0;
    }
    std::printf("soak: FAIL\n");
    for (const std::string& f : failures_) std::printf("  %s\n", f.c_str());
    return 1;
  }

  void sample_run() {
    const double duration = options_.minutes * 60;
    warm_up_ = std::min(120.0, duration / 3);  // pools, caches and connections settle; growth is judged after it
    samples_.assign(units_.size(), {});
    std::ofstream csv(options_.out + "/soak.csv");
    std::ofstream pools_csv(options_.out + "/soak_pools.csv");
    csv << "t_s,phase,unit,tid,pid,state,rss_bytes,threads,unnamed_threads,fds,pool_blocks_used,"
           "pool_bytes_reserved,events,bytes,events_per_s,bytes_per_s\n";
    pools_csv << "t_s,unit,pool,blocks_used,bytes_reserved\n";
    std::printf("soak: 4x4 event builder, every event checked, %.1f min, sample every %d s, warm-up %.0f s; "
                "CSV in %s\n", options_.minutes, options_.interval_seconds, warm_up_, options_.out.c_str());
    std::printf("%7s %-4s %-8s %9s %7s %5s %11s %11s %10s\n", "t [s]", "unit", "state", "RSS [MiB]",
                "threads", "fds", "pool blocks", "events/s", "MB/s");
    const auto started = Clock::now();
    double last_progress = 0, last_events = -1;
    for (int k = 0;; ++k) {
      const auto due = started + std::chrono::seconds(k * options_.interval_seconds);
      std::this_thread::sleep_until(due);
      const double t = std::chrono::duration<double>(Clock::now() - started).count();
      for (std::size_t i = 0; i < units_.size(); ++i) {
        Sample s = take_sample(units_[i], *executives_[i], t);
        if (!samples_[i].empty()) {
          const Sample& p = samples_[i].back();
          s.event_rate = (s.events - p.events) / (s.t - p.t);
          s.byte_rate = (s.bytes - p.bytes) / (s.t - p.t);
        }
        const char* phase = t < warm_up_ ? "warm-up" : "run";
        csv << t << ',' << phase << ',' << units_[i].name << ',' << units_[i].tid << ',' << executives_[i]->pid()
            << ',' << s.state << ',' << s.rss << ',' << s.threads << ','
            << s.unnamed_threads << ',' << s.fds << ',' << blocks_in_use(s) << ','
            << bytes_reserved(s) << ',' << s.events << ',' << s.bytes << ',' << s.event_rate << ',' << s.byte_rate
            << '\n';
        for (const auto& [name, pool] : s.pools)
          pools_csv << t << ',' << units_[i].name << ',' << name << ',' << pool.blocks_used << ','
                    << pool.bytes_reserved << '\n';
        std::printf("%7.0f %-4s %-8s %9.1f %3.0f+%-3.0f %5.0f %11.0f %11.0f %10.2f\n", t,
                    units_[i].name.c_str(), s.state.c_str(), s.rss / 1048576, s.threads, s.unnamed_threads, s.fds,
                    blocks_in_use(s), s.event_rate,
                    s.byte_rate / 1e6);
        if (s.state != "Enabled" && !unit_failed_[i]) {
          unit_failed_[i] = true;
          failures_.push_back(units_[i].name + " left Enabled at t=" + std::to_string(static_cast<int>(t)) +
                              " s: " + s.state + " " + reason(i));
        }
        samples_[i].push_back(std::move(s));
      }
      csv.flush();
      pools_csv.flush();
      const double events = samples_[0].back().events;
      if (events > last_events) last_events = events, last_progress = t;
      if (t - last_progress > std::chrono::duration<double>(kStallLimit).count()) {
        failures_.push_back("the EvM assigned no event from t=" + std::to_string(static_cast<int>(last_progress)) +
                            " s to t=" + std::to_string(static_cast<int>(t)) + " s");
        break;
      }
      if (t >= duration) break;
    }
  }

  std::string reason(std::size_t i) {
    try {
      Poco::JSON::Object::Ptr a = executives_[i]->application(units_[i].tid);
      return a && a->has("reason") ? a->getValue<std::string>("reason") : "";
    } catch (const std::exception&) {
      return "";
    }
  }

  std::vector<Sample> after_warm_up(std::size_t i) const {
    std::vector<Sample> kept;
    for (const Sample& s : samples_[i])
      if (s.t >= warm_up_) kept.push_back(s);
    return kept;
  }

  // Pools back to their at-rest values (as configured, before the enable) and descriptors and threads back to
  // their values after the warm-up, once the run is stopped.
  void check_after_stop() {
    for (std::size_t i = 0; i < units_.size(); ++i) {
      auto at_rest = [&] {
        const std::map<std::string, Pool> now = pools_of(*executives_[i]);
        for (const auto& [name, pool] : now) {
          auto rest = at_rest_[i].find(name);
          if (pool.blocks_used != (rest == at_rest_[i].end() ? 0 : rest->second.blocks_used)) return false;
        }
        return true;
      };
      if (!wait_until(at_rest, kComeBackLimit)) {
        for (const auto& [name, pool] : pools_of(*executives_[i])) {
          auto rest = at_rest_[i].find(name);
          const double wanted = rest == at_rest_[i].end() ? 0 : rest->second.blocks_used;
          if (pool.blocks_used != wanted)
            failures_.push_back(units_[i].name + ": pool " + name + " holds " + std::to_string(pool.blocks_used) +
                                " blocks " + std::to_string(kComeBackLimit.count()) + " s after the stop, " +
                                std::to_string(wanted) + " at rest");
        }
      }
      const std::vector<Sample> run = after_warm_up(i);
      if (run.empty()) continue;
      // The last control connection may still be closing: wait, reading /proc only.
      const Sample& first = run.front();
      const pid_t pid = executives_[i]->pid();
      const std::string fd_directory = "/proc/" + std::to_string(pid) + "/fd";
      if (!wait_until([&] { return entries(fd_directory) <= first.fds; }, kComeBackLimit))
        failures_.push_back(units_[i].name + ": " + std::to_string(static_cast<int>(entries(fd_directory))) +
                            " descriptors " + std::to_string(kComeBackLimit.count()) + " s after the stop, " +
                            std::to_string(static_cast<int>(first.fds)) + " after the warm-up: " +
                            descriptor_targets(pid));
      if (!wait_until([&] { return thread_counts(pid).first <= first.threads; }, kComeBackLimit))
        failures_.push_back(units_[i].name + ": " + std::to_string(static_cast<int>(thread_counts(pid).first)) +
                            " named threads after the stop, " +
                            std::to_string(static_cast<int>(first.threads)) + " after the warm-up");
    }
  }

  // What the event builder itself counts: every event assigned was built once, complete and intact.
  void check_events() {
    ExecutiveProcess& evm = *executives_[0];
    const double assigned = evm.metric(10, "events_assigned");
    auto require_zero = [&](std::size_t i, const char* name) {
      const double v = executives_[i]->metric(units_[i].tid, name);
      if (v != 0) failures_.push_back(units_[i].name + ": " + name + " = " + std::to_string(v));
    };
    if (evm.metric(10, "events_completed") != assigned) failures_.push_back("EvM: events completed != assigned");
    require_zero(0, "events_lost");
    require_zero(0, "unexpected_discards");
    double built = 0;
    for (std::size_t i = 1 + kRus; i < units_.size(); ++i) {
      for (const char* name : {"events_corrupt", "events_incomplete", "duplicate_pieces", "protocol_errors"})
        require_zero(i, name);
      built += executives_[i]->metric(units_[i].tid, "events_built");
    }
    if (built != assigned)
      failures_.push_back("BUs built " + std::to_string(built) + " events, the EvM assigned " +
                          std::to_string(assigned));
    events_assigned_ = assigned;
  }

  // Growth per hour after the warm-up of each quantity, and the RSS and climbing-count verdicts.
  void report() {
    std::ostringstream text;
    char line[320];
    std::snprintf(line, sizeof line, "%-4s %10s %12s %6s %9s %8s %10s %8s %12s %14s %10s %8s\n", "unit",
                  "RSS [MiB]", "RSS [MiB/h]", "fds", "fds [/h]", "threads", "thr. [/h]", "unnamed", "pool blocks",
                  "blocks [/h]", "events/s", "MB/s");
    text << line;
    for (std::size_t i = 0; i < units_.size(); ++i) {
      const std::vector<Sample> run = after_warm_up(i);
      if (run.size() < 2) {
        failures_.push_back(units_[i].name + ": fewer than two samples after the warm-up");
        continue;
      }
      const double rss_slope = slope(run, [](const Sample& s) { return s.rss; });
      const double fd_slope = slope(run, [](const Sample& s) { return s.fds; });
      const double thread_slope = slope(run, [](const Sample& s) { return s.threads; });
      const double block_slope = slope(run, [](const Sample& s) { return blocks_in_use(s); });
      const double span = run.back().t - run.front().t;
      double events = 0, bytes = 0;
      for (const Sample& s : run) events += s.event_rate, bytes += s.byte_rate;
      const double n = static_cast<double>(run.size());
      std::snprintf(line, sizeof line, "%-4s %10.1f %12.2f %6.0f %9.2f %8.0f %10.2f %8.0f %12.0f %14.1f %10.0f %8.2f\n",
                    units_[i].name.c_str(), run.back().rss / 1048576, rss_slope * 3600 / 1048576, run.back().fds,
                    fd_slope * 3600, run.back().threads, thread_slope * 3600, run.back().unnamed_threads,
                    blocks_in_use(run.back()),
                    block_slope * 3600, events / n, bytes / n / 1e6);
      text << line;
      if (rss_slope * span > kRssGrowthBound)
        failures_.push_back(units_[i].name + ": RSS grew " + std::to_string(rss_slope * span / 1048576) +
                            " MiB after the warm-up (fitted), past the bound of " +
                            std::to_string(kRssGrowthBound / 1048576) + " MiB");
      // A climb, not a flap: every count of the last quarter above every count of the first.
      const std::size_t quarter = std::max<std::size_t>(1, run.size() / 4);
      auto climbs = [&](auto value, const char* what) {
        double first_max = 0, last_min = 1e300;
        for (std::size_t k = 0; k < quarter; ++k) first_max = std::max(first_max, value(run[k]));
        for (std::size_t k = run.size() - quarter; k < run.size(); ++k) last_min = std::min(last_min, value(run[k]));
        if (last_min > first_max)
          failures_.push_back(units_[i].name + ": " + what + " climbed from " + std::to_string(first_max) + " to " +
                              std::to_string(last_min) + " during the run");
      };
      climbs([](const Sample& s) { return s.fds; }, "descriptors");
      climbs([](const Sample& s) { return s.threads; }, "named threads");
      double unnamed_most = 0;
      for (const Sample& s : run) unnamed_most = std::max(unnamed_most, s.unnamed_threads);
      if (unnamed_most > run.front().unnamed_threads + kControlServerThreads)
        failures_.push_back(units_[i].name + ": " + std::to_string(static_cast<int>(unnamed_most)) +
                            " unnamed threads, more than the control server's 16 above the " +
                            std::to_string(static_cast<int>(run.front().unnamed_threads)) + " after the warm-up");
    }
    std::snprintf(line, sizeof line, "events assigned: %.0f; RSS bound: %.0f MiB growth per unit after the warm-up\n",
                  events_assigned_, kRssGrowthBound / 1048576);
    text << line;
    std::printf("\nsoak: last values and growth per hour after the warm-up (fitted over %zu samples of each unit); "
                "threads: named ones, unnamed: the main thread and the control server's\n%s",
                after_warm_up(0).size(), text.str().c_str());
    std::ofstream(options_.out + "/soak_summary.txt") << text.str();
  }

  Options options_;
  std::vector<Unit> units_;
  std::unique_ptr<VirtualCluster> cluster_;  // before the executives: they end before their namespaces go
  std::vector<std::unique_ptr<ExecutiveProcess>> executives_;
  std::vector<std::map<std::string, Pool>> at_rest_;
  std::vector<std::vector<Sample>> samples_;
  std::map<std::size_t, bool> unit_failed_;
  std::vector<std::string> failures_;
  double warm_up_ = 0;
  double events_assigned_ = 0;
};

}  // namespace
}  // namespace daqx::test

int main(int argc, char** argv) {
  using namespace daqx::test;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a line per sample as it comes, also into ctest's log or a pipe
  try {
    Options options = parse(argc, argv);
    skip_test_unless_netns_available();
    const int code = Soak(options).run();
    std::fflush(stdout);
    return code;
  } catch (const std::exception& e) {
    std::printf("soak: FAIL\n  %s\n", e.what());
    return 1;
  }
}
