// daqx-launch: starts every context of a partition on this machine (one daqx-executive each), waits until
// all answer on their control port, optionally drives and watches a run, and stops them all cleanly.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daqx/executive/control_client.hpp"
#include "daqx/executive/partition.hpp"

namespace {

using Clock = std::chrono::steady_clock;
volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Child {
  std::string url;
  std::string log_path;
  pid_t pid = -1;
  bool exited = false;
  int status = 0;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: daqx-launch --config PARTITION.xml [--log-dir DIR] [--executive PATH]\n"
               "                   [--drive [--connect]] [--run SECONDS] [--ready-timeout SECONDS]\n"
               "  Starts one daqx-executive per context of the partition on this machine and waits until each\n"
               "  answers on its control URL. With --drive it configures and enables every context, prints the\n"
               "  applications' rates every second, and stops and halts them at the end. It runs until --run\n"
               "  seconds have passed (default: until Ctrl-C / SIGTERM), then stops every executive cleanly.\n"
               "  With --connect, every transport connection is opened after configure and must be up (within\n"
               "  30 s) before anything is enabled.\n"
               "Exit codes: 0 all clean, 1 a context failed to start or an application failed, 2 usage/config.\n");
}

std::string self_directory() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  std::string full(path, static_cast<std::size_t>(n));
  return full.substr(0, full.rfind('/'));
}

std::string log_tail(const std::string& path, int lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > static_cast<std::size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i)
    out += "    | " + all[i] + "\n";
  return out;
}

bool reap(Child& child) {
  if (child.exited || child.pid <= 0) return child.exited;
  int status = 0;
  if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
    child.exited = true;
    child.status = status;
  }
  return child.exited;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Stops every executive: SIGTERM, up to `grace` for a clean exit, then SIGKILL.
bool stop_all(std::vector<Child>& children, std::chrono::seconds grace) {
  for (Child& c : children)
    if (!reap(c)) kill(c.pid, SIGTERM);
  auto deadline = Clock::now() + grace;
  bool all_clean = true;
  for (Child& c : children) {
    while (!reap(c) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!c.exited) {
      std::fprintf(stderr, "daqx-launch: %s did not stop within %llds: killing it\n", c.url.c_str(),
                   static_cast<long long>(grace.count()));
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      c.exited = true;
      all_clean = false;
    } else if (!(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0)) {
      std::fprintf(stderr, "daqx-launch: %s ended with %s; log %s:\n%s", c.url.c_str(), describe_exit(c.status).c_str(),
                   c.log_path.c_str(), log_tail(c.log_path, 10).c_str());
      all_clean = false;
    }
  }
  return all_clean;
}

bool transition_all(const daqx::config::Partition& partition, const std::string& command, bool reverse) {
  std::vector<const daqx::config::ContextConfig*> order;
  for (const auto& c : partition.contexts) order.push_back(&c);
  if (reverse) std::reverse(order.begin(), order.end());
  bool ok = true;
  for (const auto* c : order) {
    // A stop may drain for a while (the event builder's EvM waits for its builders): a long answer time.
    daqx::HttpReply reply = daqx::ControlClient(c->url, std::chrono::seconds(60)).post("/api/transition", "{\"command\":\"" + command + "\"}");
    if (reply.status != 200) {
      std::fprintf(stderr, "daqx-launch: %s %s: %s\n", c->url.c_str(), command.c_str(),
                   reply.answered() ? reply.body.c_str() : ("no answer: " + reply.body).c_str());
      ok = false;
    }
  }
  return ok;
}

// --connect: every context opens its outgoing connections (POST /api/connect), all first without waiting so that
// they come up together, then each waits for its own within what is left of `limit`. False when one stays down.
bool connect_all(const daqx::config::Partition& partition, std::chrono::seconds limit) {
  const auto started = Clock::now();
  const auto deadline = started + limit;
  bool ok = true;
  for (const auto& c : partition.contexts)
    daqx::ControlClient(c.url, std::chrono::seconds(10)).post("/api/connect?timeout=0", "{}");
  std::size_t up = 0, total = 0;
  for (const auto& c : partition.contexts) {
    const auto left = std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    daqx::HttpReply reply = daqx::ControlClient(c.url, std::chrono::milliseconds(left + 5000))
                                .post("/api/connect?timeout=" + std::to_string(left), "{}");
    if (reply.status != 200 && reply.status != 504) {
      std::fprintf(stderr, "daqx-launch: %s connect: %s\n", c.url.c_str(),
                   reply.answered() ? reply.body.c_str() : ("no answer: " + reply.body).c_str());
      ok = false;
      continue;
    }
    try {
      Poco::JSON::Object::Ptr result = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
      up += result->getValue<std::size_t>("up");
      total += result->getValue<std::size_t>("total");
      Poco::JSON::Array::Ptr down = result->getArray("down");
      for (std::size_t i = 0; down && i < down->size(); ++i) {
        Poco::JSON::Object::Ptr entry = down->getObject(static_cast<unsigned>(i));
        std::fprintf(stderr, "daqx-launch: %s: connection to %s (%s) not up within %llds\n", c.url.c_str(),
                     entry->getValue<std::string>("remote").c_str(), entry->getValue<std::string>("protocol").c_str(),
                     static_cast<long long>(limit.count()));
      }
    } catch (const Poco::Exception& error) {
      std::fprintf(stderr, "daqx-launch: %s connect: unreadable answer: %s\n", c.url.c_str(), error.displayText().c_str());
      ok = false;
      continue;
    }
    if (reply.status != 200) ok = false;
  }
  std::printf("daqx-launch: %zu/%zu connections up in %.2f s\n", up, total,
              std::chrono::duration<double>(Clock::now() - started).count());
  std::fflush(stdout);
  return ok;
}

std::string human_rate(const std::string& name, double value) {
  char text[64];
  if (name.find("byte") != std::string::npos) {
    std::snprintf(text, sizeof text, "%.3f GB/s", value / 1e9);
  } else {
    std::snprintf(text, sizeof text, "%.0f/s", value);
  }
  return text;
}

// One line per application with its rate gauges; returns false when an application is Failed.
// "evb/bu/1" -> "evb/bu": applications of one class are summed under this name.
std::string kind_of(const std::string& name) {
  const std::size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(0, slash);
}

bool print_rates(const daqx::config::Partition& partition, double elapsed, std::map<std::string, double>& last_counters) {
  bool healthy = true;
  std::map<std::string, std::map<std::string, double>> kind_rates;  // kind -> rate gauge -> sum
  std::map<std::string, int> kind_count;
  for (const auto& c : partition.contexts) {
    daqx::HttpReply reply = daqx::ControlClient(c.url, std::chrono::seconds(3)).get("/api/applications");
    if (reply.status != 200) {
      std::printf("%7.1fs %s: no answer\n", elapsed, c.url.c_str());
      healthy = false;
      continue;
    }
    Poco::JSON::Array::Ptr apps = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Array::Ptr>();
    for (std::size_t i = 0; i < apps->size(); ++i) {
      Poco::JSON::Object::Ptr app = apps->getObject(static_cast<unsigned>(i));
      std::string name = app->getValue<std::string>("name");
      std::string state = app->getValue<std::string>("state");
      std::string line;
      Poco::JSON::Array::Ptr metrics = app->getArray("metrics");
      for (std::size_t m = 0; metrics && m < metrics->size(); ++m) {
        Poco::JSON::Object::Ptr metric = metrics->getObject(static_cast<unsigned>(m));
        std::string metric_name = metric->getValue<std::string>("name");
        double value = metric->getValue<double>("value");
        // Per-peer metrics (labelled) would overwrite each other under one name: the summary keeps the rest.
        const bool labelled = metric->has("labels") && metric->getObject("labels") && metric->getObject("labels")->size() != 0;
        const bool counter = metric->optValue<std::string>("kind", "gauge") == "counter";
        if (!labelled) last_counters[name + " " + metric_name + (counter ? "" : " ")] = value;
        if (metric_name.find("rate") != std::string::npos) {
          line += "  " + metric_name + " " + human_rate(metric_name, value);
          kind_rates[kind_of(name)][metric_name] += value;
        }
      }
      ++kind_count[kind_of(name)];
      if (state == "Failed") {
        healthy = false;
        line += "  FAILED: " + app->optValue<std::string>("reason", "");
      }
      std::printf("%7.1fs %-24s %-10s%s\n", elapsed, name.c_str(), state.c_str(), line.c_str());
    }
  }
  // With several applications of a kind, their sum is what the partition does (e.g. all BUs together).
  for (const auto& [kind, rates] : kind_rates) {
    if (kind_count[kind] < 2) continue;
    std::string line;
    for (const auto& [metric_name, value] : rates) line += "  " + metric_name + " " + human_rate(metric_name, value);
    const std::string label = kind + "/* (" + std::to_string(kind_count[kind]) + ")";
    std::printf("%7.1fs %-24s %-10s%s\n", elapsed, label.c_str(), "total", line.c_str());
  }
  std::fflush(stdout);
  return healthy;
}

// After the run: per kind of application, the sum of its throughput counters and their average rate.
void print_totals(const std::map<std::string, double>& counters, double seconds) {
  std::map<std::string, std::map<std::string, double>> sums;
  for (const auto& [key, value] : counters) {
    const std::size_t space = key.find(' ');
    if (key.ends_with(" ")) continue;  // a gauge (see print_rates): a level, not an amount
    const std::string app = key.substr(0, space), metric_name = key.substr(space + 1);
    const bool throughput = metric_name.find("bytes") != std::string::npos || metric_name.ends_with("_built") ||
                            metric_name.ends_with("_completed") || metric_name.ends_with("_sent") ||
                            metric_name.ends_with("_received");
    if (throughput && metric_name.find("rate") == std::string::npos) sums[kind_of(app)][metric_name] += value;
  }
  if (sums.empty() || seconds <= 0) return;
  std::printf("daqx-launch: totals over %.1fs (average rate)\n", seconds);
  for (const auto& [kind, metrics] : sums)
    for (const auto& [metric_name, value] : metrics) {
      if (value == 0) continue;
      const bool bytes = metric_name.find("bytes") != std::string::npos;
      if (bytes)
        std::printf("  %-16s %-28s %10.3f GB  (%.3f GB/s)\n", kind.c_str(), metric_name.c_str(), value / 1e9,
                    value / 1e9 / seconds);
      else
        std::printf("  %-16s %-28s %10.0f     (%.0f/s)\n", kind.c_str(), metric_name.c_str(), value, value / seconds);
    }
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string log_dir = "daqx-logs";
  std::string executive = self_directory() + "/daqx-executive";
  bool drive = false;
  bool connect = false;  // with drive: open every connection after configure, before enable
  double run_seconds = 0;
  double ready_timeout = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "daqx-launch: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-c" || a == "--config") config_path = value();
    else if (a == "--log-dir") log_dir = value();
    else if (a == "--executive") executive = value();
    else if (a == "--drive") drive = true;
    else if (a == "--connect") connect = true;
    else if (a == "--run") run_seconds = std::stod(value());
    else if (a == "--ready-timeout") ready_timeout = std::stod(value());
    else if (a == "-h" || a == "--help") { usage(stdout); return 0; }
    else { std::fprintf(stderr, "daqx-launch: unknown argument '%s'\n", a.c_str()); usage(stderr); return 2; }
  }
  if (config_path.empty()) { usage(stderr); return 2; }
  if (connect && !drive) { std::fprintf(stderr, "daqx-launch: --connect goes with --drive\n"); return 2; }

  daqx::config::Partition partition;
  try {
    partition = daqx::config::load_partition(config_path);
    daqx::set_default_control_access(daqx::ControlAccess::from(&partition));  // token and CA for every request
  } catch (const daqx::config::ConfigError& e) {
    for (const auto& m : e.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return 2;
  } catch (const std::runtime_error& e) {  // a token file that cannot be used
    std::fprintf(stderr, "daqx-launch: %s\n", e.what());
    return 2;
  }
  std::filesystem::create_directories(log_dir);
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  std::vector<Child> children;
  for (const auto& context : partition.contexts) {
    Child child;
    child.url = context.url;
    child.log_path = log_dir + "/" + context.host + "_" + std::to_string(context.port) + ".log";
    int log_fd = open(child.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      std::fprintf(stderr, "daqx-launch: cannot write %s: %s\n", child.log_path.c_str(), std::strerror(errno));
      stop_all(children, std::chrono::seconds(10));
      return 1;
    }
    child.pid = fork();
    if (child.pid == 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      signal(SIGINT, SIG_IGN);  // Ctrl-C goes to the launcher, which stops the executives in order
      execl(executive.c_str(), executive.c_str(), "--config", config_path.c_str(), "--context", context.url.c_str(),
            static_cast<char*>(nullptr));
      std::fprintf(stderr, "cannot run %s: %s\n", executive.c_str(), std::strerror(errno));
      _exit(127);
    }
    close(log_fd);
    children.push_back(child);
  }

  // Wait until each answers on its control port, or report the one that did not come up, with its log.
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ready_timeout));
  for (Child& child : children) {
    for (;;) {
      if (reap(child)) {
        std::fprintf(stderr, "daqx-launch: context %s failed to start (%s); log %s:\n%s", child.url.c_str(),
                     describe_exit(child.status).c_str(), child.log_path.c_str(), log_tail(child.log_path, 20).c_str());
        stop_all(children, std::chrono::seconds(10));
        return 1;
      }
      if (daqx::ControlClient(child.url, std::chrono::seconds(1)).get("/api/executive").status == 200) break;
      if (Clock::now() > deadline || g_stop) {
        std::fprintf(stderr, "daqx-launch: context %s did not answer within %.0fs; log %s:\n%s", child.url.c_str(),
                     ready_timeout, child.log_path.c_str(), log_tail(child.log_path, 20).c_str());
        stop_all(children, std::chrono::seconds(10));
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::printf("daqx-launch: %zu contexts of partition '%s' up (logs in %s)\n", children.size(), partition.name.c_str(),
              log_dir.c_str());
  std::fflush(stdout);

  bool healthy = true;
  if (drive) {
    healthy = transition_all(partition, "configure", false) &&
              (!connect || connect_all(partition, std::chrono::seconds(30))) && transition_all(partition, "enable", false);
    if (healthy) std::printf("daqx-launch: configured and enabled\n");
  }
  auto start = Clock::now();
  std::map<std::string, double> counters;
  while (!g_stop && healthy) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (run_seconds > 0 && elapsed >= run_seconds) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (Child& c : children)
      if (reap(c)) {
        std::fprintf(stderr, "daqx-launch: context %s died (%s); log %s:\n%s", c.url.c_str(), describe_exit(c.status).c_str(),
                     c.log_path.c_str(), log_tail(c.log_path, 20).c_str());
        healthy = false;
      }
    if (drive && healthy) healthy = print_rates(partition, std::chrono::duration<double>(Clock::now() - start).count(), counters);
  }
  if (drive) {
    const double run_time = std::chrono::duration<double>(Clock::now() - start).count();
    transition_all(partition, "stop", true);
    print_rates(partition, std::chrono::duration<double>(Clock::now() - start).count(), counters);  // final counts
    std::printf("daqx-launch: summary after %.1fs\n", std::chrono::duration<double>(Clock::now() - start).count());
    for (const auto& [key, value] : counters)
      if (value != 0 && key.find("rate") == std::string::npos) std::printf("  %-52s %.0f\n", key.c_str(), value);
    print_totals(counters, run_time);
    transition_all(partition, "halt", true);
  }
  bool clean = stop_all(children, std::chrono::seconds(15));
  std::printf("daqx-launch: all contexts stopped%s\n", clean ? " cleanly" : " (not all cleanly)");
  return clean && healthy ? 0 : 1;
}
