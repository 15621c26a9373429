// daqxctl: drives the executives of a partition, or one executive, through their HTTP control API, or watches
// them live (watch/top); and shows or cleans the shared-memory segments of this host (daqxctl shm list|clean).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <signal.h>

#include <csignal>
#include <ctime>
#include <thread>

#include "daqx/control/control_client.hpp"
#include "daqx/control/control_request_pool.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/control/partition_connect.hpp"
#include "daqx/control/partition_transition.hpp"
#include "daqx/executive/run_number.hpp"
#include "daqx/services/number_text.hpp"
#include "daqx/services/version.hpp"
#include "live_view.hpp"
#include "partition_poll.hpp"
#include "rate_table.hpp"
#include "unit_rates.hpp"

namespace {

enum ExitCode : int {
  kSuccess = 0,
  kRefused = 1,      // a transition or parameter was refused, or an application is Failed
  kUsage = 2,        // bad command line or partition
  kUnreachable = 3,  // a context did not answer
};

constexpr const char* kUsageText =
    "usage: daqxctl (--config PARTITION.xml [--context URL] | --url URL) [--app TID] [--timeout SECONDS]\n"
    "               [--fanout N] [--token-file FILE] [--ca-file FILE] COMMAND\n"
    "       daqxctl (--config PARTITION.xml [--context URL] | --url URL) [--interval SECONDS] [--count N]\n"
    "               [--fanout N] watch\n"
    "commands:\n"
    "  status          state of every application: context, tid, class, instance, state, reason\n"
    "  configure       Halted -> Configured, in phases in partition order (below)\n"
    "  enable          Configured -> Enabled, in phases in partition order (receivers are ready before senders\n"
    "                  start), in run --run N, or in the next run of --run-file PATH (default: $DAQX_RUN_FILE)\n"
    "  stop            Enabled -> Configured, in phases in reverse order (senders stop first)\n"
    "  halt            -> Halted (also from Failed), in phases in reverse order\n"
    "  params          parameters of every application (or of --app)\n"
    "  set NAME=VALUE  sets a parameter of --app (only while Halted)\n"
    "  connect         opens every outgoing transport connection of every context ahead of a run and waits\n"
    "                  until all are up (exit 0) or --timeout passes (exit 1, naming those still down)\n"
    "  watch (or top)  a live view of the running partition: per context whether it answers, its run, its\n"
    "                  connections up and its pools' use; per application its state, rates (from two readings of\n"
    "                  its counters) and what it moved this run; totals per kind. Every --interval SECONDS\n"
    "                  (default 1, 0.1 to 3600): redrawn in place on a terminal, else one line per context and per\n"
    "                  application per refresh. --count N: stop after N refreshes (default: at Ctrl-C). A context\n"
    "                  that does not answer (within max(2, interval) s) is shown as unreachable; exit 0. One\n"
    "                  GET /api/summary per context per refresh, at most --fanout N at once;\n"
    "                  above 32 applications only the totals per kind and what needs attention are listed\n"
    "  Transitions go in phases: consecutive contexts of the partition file that host the same set of\n"
    "  application classes form one phase; configure and enable take the phases in file order and end after\n"
    "  one in which a context did not do it, stop and halt take them in reverse and go on, to bring down all\n"
    "  they can. The contexts of a phase are asked at once, at most --fanout N at a time (default 64, 1 to\n"
    "  1024; connect and watch too, all over 4 threads), each answering within --timeout or named. Printed: a line per context that did it,\n"
    "  one per context that did not (stderr) and a total (\"configure: 64/64 contexts in 1.02 s (1 phase)\")\n"
    "       daqxctl shm list|clean   (this host, no partition needed)\n"
    "       daqxctl --version | --help\n"
    "  shm list        the processes that hold daqx shared-memory segments (memfd, ptshm) and their sizes, and\n"
    "                  files named daqx* in /dev/shm with whether a live process still has them open or mapped\n"
    "  shm clean       removes the files named daqx* in /dev/shm that no live process has open or mapped\n"
    "access: --token-file FILE (else $DAQX_TOKEN_FILE, else the partition's <Control tokenFile>) is the bearer\n"
    "        token sent with every request; --ca-file FILE (else $DAQX_CA_FILE, else <Control ca>) is the CA an\n"
    "        https:// executive's certificate must chain to\n"
    "numbers: decimal, the whole argument (no blank, '+' or 0x; --timeout 0.001 to 86400 s): docs/configuration.md,\n"
    "         \"Numbers\"\n"
    "exit: 0 done, 1 refused (also 401/403: no or wrong token), an application Failed or a connection not up,\n"
    "      2 usage or partition error, 3 a context did not answer (also a failed TLS handshake)\n";

struct Options {
  std::string config;   // partition file
  std::string url;      // one executive, without a partition
  std::string context;  // only this context of the partition
  std::optional<std::uint32_t> app;
  double timeout_seconds = 30;  // configure may allocate and register large pools: give it time
  unsigned fanout = daqx::kDefaultControlFanout;  // transitions, connect, watch: requests in flight at once
  std::string command;
  std::string argument;  // NAME=VALUE for set
  std::optional<std::uint64_t> run;  // enable: the run given
  std::string run_file;              // enable: where to allocate the run from
  daqx::ControlAccess::Files access;  // --token-file, --ca-file
  double interval_seconds = 1;        // watch: between refreshes
  unsigned count = 0;                 // watch: refreshes before it ends; 0: until interrupted
};

struct UsageError {
  std::string message;
};

// The context did not answer, or not with our API.
struct Unreachable {
  std::string url;
  std::string reason;
};

// The context answered, with an error (an unknown application, say).
struct Refused {
  std::string url;
  std::string reason;
};

struct Answer {
  int status = 0;
  Poco::Dynamic::Var json;
};

std::string normalized_url(std::string url) {
  if (url.find("://") == std::string::npos) url = "http://" + url;
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return url;
}

// An option's number, read by the strict syntax of every number daqx takes (daqx/services/number_text.hpp);
// refused as "OPTION (what it is): why".
template <typename Number>
Number number_option(const std::string& option, std::string_view what, daqx::numbers::Parsed<Number> parsed) {
  if (!parsed) throw UsageError{option + " (" + std::string(what) + "): " + parsed.error};
  return *parsed;
}

Options parse_options(int argc, char** argv) {
  Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      has_value = true;
    }
    auto take_value = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError{arg + " needs a value"};
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsageText;
      std::exit(kSuccess);
    } else if (arg == "--version") {
      std::cout << "daqxctl " << daqx::version_line() << "\n";
      std::exit(kSuccess);
    } else if (arg == "--config") {
      options.config = take_value();
    } else if (arg == "--url") {
      options.url = normalized_url(take_value());
    } else if (arg == "--context") {
      options.context = normalized_url(take_value());
    } else if (arg == "--token-file") {
      options.access.token_file = take_value();
    } else if (arg == "--ca-file") {
      options.access.ca_file = take_value();
    } else if (arg == "--app") {
      options.app = number_option(arg, "an application id", daqx::numbers::parse<std::uint32_t>(take_value(), 1));
    } else if (arg == "--timeout") {
      options.timeout_seconds =
          number_option(arg, "seconds, 0.001 to 86400", daqx::numbers::parse_real(take_value(), 0.001, 86400));
    } else if (arg == "--fanout") {
      options.fanout = number_option(arg, "contexts asked at once",
                                     daqx::numbers::parse<unsigned>(take_value(), 1, daqx::kMaxControlFanout));
    } else if (arg == "--run") {
      options.run =
          number_option(arg, "a run number", daqx::numbers::parse_unsigned(take_value(), 1, daqx::kMaxRunNumber));
    } else if (arg == "--interval") {
      options.interval_seconds = number_option(arg, "seconds", daqx::numbers::parse_real(take_value(), 0.1, 3600));
    } else if (arg == "--count") {
      options.count = number_option(arg, "refreshes", daqx::numbers::parse<unsigned>(take_value(), 1));
    } else if (arg == "--run-file") {
      options.run_file = take_value();
      if (options.run_file.empty()) throw UsageError{"--run-file needs a path"};
    } else if (arg.starts_with("--")) {
      throw UsageError{"unknown option " + arg};
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.empty()) throw UsageError{"no command given"};
  options.command = positional[0] == "top" ? "watch" : positional[0];
  static const std::vector<std::string> commands = {"status", "configure", "enable",  "stop", "halt",
                                                    "params", "set",       "connect", "watch"};
  if (std::find(commands.begin(), commands.end(), options.command) == commands.end()) {
    throw UsageError{"unknown command '" + options.command + "'"};
  }
  if (options.command == "set") {
    if (positional.size() != 2 || positional[1].find('=') == std::string::npos || positional[1].front() == '=') {
      throw UsageError{"set needs NAME=VALUE"};
    }
    if (!options.app) throw UsageError{"set needs --app TID"};
    options.argument = positional[1];
  } else if (positional.size() > 1) {
    throw UsageError{"unexpected argument '" + positional[1] + "'"};
  }
  if ((options.run || !options.run_file.empty()) && options.command != "enable") {
    throw UsageError{"--run and --run-file go with enable"};
  }
  if (options.run && !options.run_file.empty()) throw UsageError{"give either --run or --run-file"};
  if (options.command != "watch" && (options.count != 0 || options.interval_seconds != 1))
    throw UsageError{"--interval and --count go with watch"};
  if (options.command == "enable" && !options.run && options.run_file.empty()) {
    if (const char* run_file = std::getenv("DAQX_RUN_FILE"); run_file != nullptr) options.run_file = run_file;
  }
  if (options.config.empty() == options.url.empty()) throw UsageError{"give either --config or --url"};
  if (!options.url.empty() && !options.context.empty()) throw UsageError{"--context goes with --config, not --url"};
  return options;
}

// The contexts to talk to, in partition order.
std::vector<std::string> contexts_of(const Options& options, const daqx::config::Partition* loaded) {
  if (loaded == nullptr) return {options.url};
  const daqx::config::Partition& partition = *loaded;
  auto find = [&](const std::string& url) -> const daqx::config::ContextConfig* {
    for (const auto& context : partition.contexts) {
      if (normalized_url(context.url) == url) return &context;
    }
    return nullptr;
  };
  if (!options.context.empty() && find(options.context) == nullptr) {
    throw UsageError{"no context " + options.context + " in " + options.config};
  }
  if (options.app) {
    const daqx::config::ContextConfig* context = partition.context_of(*options.app);
    if (context == nullptr) {
      throw UsageError{"no application with tid " + std::to_string(*options.app) + " in " + options.config};
    }
    if (!options.context.empty() && normalized_url(context->url) != options.context) {
      throw UsageError{"application " + std::to_string(*options.app) + " is in " + context->url + ", not in " +
                       options.context};
    }
    return {normalized_url(context->url)};
  }
  if (!options.context.empty()) return {options.context};
  std::vector<std::string> urls;
  for (const auto& context : partition.contexts) urls.push_back(normalized_url(context.url));
  return urls;
}

// One request and its JSON answer. Throws Unreachable when the context does not answer, or not with JSON.
Answer call(const std::string& url, const std::string& method, const std::string& path, const std::string& body,
            double timeout_seconds) {
  std::optional<daqx::ControlClient> client;
  try {
    client.emplace(url, std::chrono::milliseconds(static_cast<std::int64_t>(timeout_seconds * 1000)));
  } catch (const std::invalid_argument& error) {
    throw UsageError{error.what()};
  }
  const daqx::HttpReply reply = method == "GET" ? client->get(path) : client->post(path, body);
  if (!reply.answered()) throw Unreachable{url, reply.body};
  Answer answer;
  answer.status = reply.status;
  try {
    answer.json = Poco::JSON::Parser().parse(reply.body);
  } catch (const Poco::Exception&) {
    throw Unreachable{url, "answered " + std::to_string(reply.status) + " without JSON to " + method + " " + path};
  }
  return answer;
}

Poco::JSON::Object::Ptr object_of(const Poco::Dynamic::Var& value) {
  if (value.type() == typeid(Poco::JSON::Object::Ptr)) return value.extract<Poco::JSON::Object::Ptr>();
  return {};
}

std::string text(const Poco::JSON::Object::Ptr& object, const std::string& key) {
  if (!object || !object->has(key) || object->isNull(key)) return {};
  return object->get(key).convert<std::string>();
}

// The application objects a context reports: all of them, or the one asked for.
std::vector<Poco::JSON::Object::Ptr> applications(const std::string& url, const Options& options) {
  const std::string path =
      options.app ? "/api/applications/" + std::to_string(*options.app) : std::string("/api/applications");
  const Answer answer = call(url, "GET", path, {}, options.timeout_seconds);
  if (answer.status != 200) {
    throw Refused{url, "GET " + path + " (" + std::to_string(answer.status) + "): " +
                           text(object_of(answer.json), "error")};
  }
  std::vector<Poco::JSON::Object::Ptr> objects;
  if (options.app) {
    if (auto object = object_of(answer.json)) objects.push_back(object);
  } else if (answer.json.type() == typeid(Poco::JSON::Array::Ptr)) {
    const auto array = answer.json.extract<Poco::JSON::Array::Ptr>();
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (auto object = array->getObject(static_cast<unsigned>(i))) objects.push_back(object);
    }
  }
  return objects;
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  }
}

void report_unreachable(const Unreachable& error) {
  std::cerr << "daqxctl: " << error.url << " did not answer: " << error.reason << "\n";
}

int status(const std::vector<std::string>& urls, const Options& options) {
  int exit_code = kSuccess;
  std::vector<std::vector<std::string>> rows = {{"CONTEXT", "TID", "CLASS", "INSTANCE", "STATE", "REASON"}};
  for (const std::string& url : urls) {
    try {
      for (const auto& application : applications(url, options)) {
        const std::string state = text(application, "state");
        if (state == "Failed" && exit_code == kSuccess) exit_code = kRefused;
        rows.push_back({url, text(application, "tid"), text(application, "class"), text(application, "instance"),
                        state, text(application, "reason")});
      }
    } catch (const Unreachable& error) {
      report_unreachable(error);
      exit_code = kUnreachable;
    } catch (const Refused& error) {
      std::cerr << "daqxctl: " << error.url << " refused " << error.reason << "\n";
      if (exit_code == kSuccess) exit_code = kRefused;
    }
  }
  if (rows.size() > 1) print_table(rows);
  return exit_code;
}

int params(const std::vector<std::string>& urls, const Options& options) {
  int exit_code = kSuccess;
  bool first = true;
  for (const std::string& url : urls) {
    try {
      for (const auto& application : applications(url, options)) {
        if (!first) std::cout << "\n";
        first = false;
        std::cout << url << " tid " << text(application, "tid") << " " << text(application, "class") << " instance "
                  << text(application, "instance") << " (" << text(application, "state") << ")\n";
        std::vector<std::vector<std::string>> rows = {{"  NAME", "TYPE", "VALUE", "DEFAULT", "UNIT", "HELP"}};
        const auto parameters = application->getArray("parameters");
        for (std::size_t i = 0; parameters && i < parameters->size(); ++i) {
          const auto parameter = parameters->getObject(static_cast<unsigned>(i));
          rows.push_back({"  " + text(parameter, "name"), text(parameter, "type"), text(parameter, "value"),
                          text(parameter, "default"), text(parameter, "unit"), text(parameter, "help")});
        }
        print_table(rows);
      }
    } catch (const Unreachable& error) {
      report_unreachable(error);
      exit_code = kUnreachable;
    } catch (const Refused& error) {
      std::cerr << "daqxctl: " << error.url << " refused " << error.reason << "\n";
      if (exit_code == kSuccess) exit_code = kRefused;
    }
  }
  return exit_code;
}

// The contexts a transition takes, in phases: the partition's (daqx/control/partition_transition.hpp), or the
// one context asked for.
daqx::ContextPhases phases_of(const std::vector<std::string>& urls, const Options& options,
                              const daqx::config::Partition* partition) {
  if (partition == nullptr || !options.context.empty() || options.app) return {urls};
  daqx::ContextPhases phases = daqx::transition_phases(*partition);
  for (auto& phase : phases)
    for (std::string& url : phase) url = normalized_url(url);
  return phases;
}

// Bringing up goes phase by phase in partition order and ends after a phase where a context did not do it, since
// later contexts rely on the earlier ones; bringing down goes in reverse and carries on, to bring down as much as it
// can. Inside a phase the contexts are asked at once.
int transition(const daqx::ContextPhases& phases, const Options& options) {
  daqx::TransitionRequest request;
  request.command = options.command;
  request.path = options.app ? "/api/applications/" + std::to_string(*options.app) + "/transition"
                             : std::string("/api/transition");
  request.deadline = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_seconds * 1000));
  if (options.command == "enable") {
    // One number for every context, allocated once the partition is known to be readable.
    std::uint64_t run = options.run.value_or(0);
    if (!options.run_file.empty()) run = daqx::RunNumberFile(options.run_file).next();
    if (run != 0) {
      request.run = run;
      std::cout << "run " << run << (options.run_file.empty() ? "" : " (from " + options.run_file + ")") << "\n";
    }
  }
  daqx::ControlRequestPool pool(options.fanout);  // after the access is set: its requests present it
  const daqx::TransitionOutcome outcome = daqx::run_transition(phases, request, pool);
  for (const daqx::ContextOutcome& context : outcome.contexts)
    if (context.result == daqx::ContextOutcome::Result::done)
      std::cout << context.url << " " << options.command << " done: " << context.states << "\n";
  std::cout.flush();
  for (const std::string& line : outcome.failure_lines()) std::cerr << "daqxctl: " << line << "\n";
  std::cout << outcome.total_line() << "\n";
  if (outcome.count(daqx::ContextOutcome::Result::no_answer) != 0) return kUnreachable;
  return outcome.ok() ? kSuccess : kRefused;
}

int set_parameter(const std::vector<std::string>& urls, const Options& options) {
  const std::string name = options.argument.substr(0, options.argument.find('='));
  const std::string value = options.argument.substr(options.argument.find('=') + 1);
  Poco::JSON::Object body;
  body.set("name", name);
  body.set("value", value);
  std::ostringstream json;
  body.stringify(json);
  const std::string path = "/api/applications/" + std::to_string(*options.app) + "/parameters";
  try {
    const Answer answer = call(urls.front(), "POST", path, json.str(), options.timeout_seconds);
    if (answer.status == 200) {
      std::cout << urls.front() << " tid " << *options.app << ": " << name << " = " << value << "\n";
      return kSuccess;
    }
    std::cerr << "daqxctl: " << urls.front() << " refused " << name << "=" << value << " for tid " << *options.app
              << " (" << answer.status << "): " << text(object_of(answer.json), "error") << "\n";
    return kRefused;
  } catch (const Unreachable& error) {
    report_unreachable(error);
    return kUnreachable;
  }
}

// Every context opens its connections (POST /api/connect): first all of them without waiting, so that they come
// up together, then each is asked to wait for its own within what is left of --timeout (at most 120 s).
int connect_all(const std::vector<std::string>& urls, const Options& options) {
  const auto limit = std::chrono::milliseconds(static_cast<std::int64_t>(std::min(options.timeout_seconds, 120.0) * 1000));
  const auto ask = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_seconds * 1000));
  int exit_code = kSuccess;
  daqx::ControlRequestPool pool(options.fanout);
  for (const daqx::ContextConnections& context : daqx::connect_contexts(urls, limit, pool, ask)) {
    if (!context.answered()) {
      report_unreachable(Unreachable{context.url, context.error});
      exit_code = kUnreachable;
      continue;
    }
    if (!context.error.empty()) {
      std::cerr << "daqxctl: " << context.url << " refused connect (" << context.status << "): " << context.error << "\n";
      if (exit_code == kSuccess) exit_code = kRefused;
      continue;
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", context.seconds);
    std::cout << context.url << ": " << context.up << "/" << context.total << " connections up in " << seconds << " s\n";
    for (const daqx::DownConnection& down : context.down)
      std::cout << "  down: " << down.protocol << " peer " << down.peer << " " << down.remote << "\n";
    if (!context.all_up() && exit_code == kSuccess) exit_code = kRefused;
  }
  return exit_code;
}

// ---- watch: a live view of a running partition ----------------------------------------------------------

volatile std::sig_atomic_t g_stop_watching = 0;
void stop_watching(int) { g_stop_watching = 1; }

std::string time_of_day() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%SZ", &utc);
  return text;
}

int watch(const std::vector<std::string>& urls, const Options& options, const std::string& partition_name) {
  using namespace daqx::console;
  struct sigaction action {};
  action.sa_handler = stop_watching;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  LiveView view(stdout, LiveView::mode_for(stdout));
  const Layout layout = view.mode() == LiveView::Mode::in_place ? Layout::terminal : Layout::plain;
  // A context that hangs delays a refresh by this much, at most; one that refuses costs nothing.
  const auto timeout = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::min(options.timeout_seconds, std::max(2.0, options.interval_seconds)) * 1000));
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options.interval_seconds));
  RateTracker rates;
  daqx::ContextPoller poller(options.fanout);  // after the access is set: its requests present it
  auto next = std::chrono::steady_clock::now();
  for (unsigned refresh = 1; !g_stop_watching; ++refresh) {
    const std::vector<ContextSample> samples = poll_contexts(poller, urls, timeout);
    const std::vector<UnitRates> units = rates.update(samples);
    const std::string when = time_of_day();
    char every[32];
    std::snprintf(every, sizeof every, "%g", options.interval_seconds);
    view.show(partition_table(samples, units, layout,
                              partition_name + "  " + when + "  every " + every + " s  (Ctrl-C ends)", when + "  "));
    if (options.count != 0 && refresh >= options.count) break;
    next += interval;
    while (!g_stop_watching && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(next - std::chrono::steady_clock::now(),
                                                                               std::chrono::milliseconds(50)));
  }
  return kSuccess;
}

// ---- shm: shared-memory segments of this host ------------------------------------------------------------

// What every live process has open (/proc/PID/fd) or mapped (/proc/PID/maps) that names a daqx segment.
struct ShmUse {
  std::map<int, std::pair<std::size_t, std::uintmax_t>> memfds;  // pid -> (segments, bytes)
  std::set<std::string> files;                                    // /dev/shm paths in use
};

ShmUse shm_use() {
  namespace fs = std::filesystem;
  ShmUse use;
  std::error_code error;
  for (const fs::directory_entry& process : fs::directory_iterator("/proc", error)) {
    const std::string name = process.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::atoi(name.c_str());
    std::error_code fd_error;
    for (const fs::directory_entry& fd : fs::directory_iterator(process.path() / "fd", fd_error)) {
      std::error_code link_error;
      const std::string target = fs::read_symlink(fd.path(), link_error).string();
      if (link_error) continue;
      if (target.starts_with("/memfd:daqx-shm")) {
        auto& entry = use.memfds[pid];
        ++entry.first;
        std::error_code size_error;
        const std::uintmax_t bytes = fs::file_size(fd.path(), size_error);
        if (!size_error) entry.second += bytes;
      } else if (target.starts_with("/dev/shm/daqx")) {
        use.files.insert(target);
      }
    }
    std::ifstream maps(process.path() / "maps");
    std::string line;
    while (std::getline(maps, line)) {
      const std::size_t at = line.find("/dev/shm/daqx");
      if (at != std::string::npos) use.files.insert(line.substr(at, line.find(' ', at) - at));
    }
  }
  return use;
}

int shm_command(const std::string& what) {
  namespace fs = std::filesystem;
  if (what != "list" && what != "clean") {
    std::cerr << "daqxctl: shm needs list or clean (daqxctl --help for usage)\n";
    return kUsage;
  }
  const ShmUse use = shm_use();
  std::vector<fs::path> files;
  std::error_code error;
  for (const fs::directory_entry& file : fs::directory_iterator("/dev/shm", error))
    if (file.path().filename().string().starts_with("daqx")) files.push_back(file.path());
  if (what == "list") {
    // memfd segments have no name: they go with the last process that has them, however it ends.
    for (const auto& [pid, segments] : use.memfds) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string command;
      std::getline(comm, command);
      std::cout << "memfd  pid " << pid << " (" << command << "): " << segments.first << " segments, " << segments.second
                << " B\n";
    }
    for (const fs::path& file : files) {
      std::error_code size_error;
      const std::uintmax_t bytes = fs::file_size(file, size_error);
      std::cout << "file   " << file.string() << ": " << (size_error ? 0 : bytes) << " B, "
                << (use.files.count(file.string()) != 0 ? "in use" : "stale (daqxctl shm clean removes it)") << "\n";
    }
    if (use.memfds.empty() && files.empty()) std::cout << "no daqx shared-memory segments on this host\n";
    return kSuccess;
  }
  int removed = 0;
  for (const fs::path& file : files) {
    if (use.files.count(file.string()) != 0) continue;
    std::error_code remove_error;
    if (fs::remove(file, remove_error)) {
      std::cout << "removed " << file.string() << "\n";
      ++removed;
    } else {
      std::cerr << "daqxctl: cannot remove " << file.string() << ": " << remove_error.message() << "\n";
    }
  }
  std::cout << removed << " stale segments removed; memfd segments of live processes are theirs\n";
  return kSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::cerr << kUsageText;
    return kUsage;
  }
  // Local, before any partition or URL: the shared-memory segments of this host.
  if (std::string_view(argv[1]) == "shm") return shm_command(argc > 2 ? argv[2] : "");
  try {
    const Options options = parse_options(argc, argv);
    std::optional<daqx::config::Partition> partition;
    if (!options.config.empty()) partition = daqx::config::load_partition(options.config);
    // Every request below presents this token and verifies TLS against this CA.
    daqx::set_default_control_access(daqx::ControlAccess::from(partition ? &*partition : nullptr, options.access));
    const std::vector<std::string> urls = contexts_of(options, partition ? &*partition : nullptr);
    if (urls.empty()) throw UsageError{"the partition has no contexts"};
    if (options.command == "status") return status(urls, options);
    if (options.command == "params") return params(urls, options);
    if (options.command == "set") return set_parameter(urls, options);
    if (options.command == "connect") return connect_all(urls, options);
    if (options.command == "watch") {
      std::string name = partition ? "partition " + partition->name : "executive " + options.url;
      return watch(urls, options, name);
    }
    return transition(phases_of(urls, options, partition ? &*partition : nullptr), options);
  } catch (const UsageError& error) {
    std::cerr << "daqxctl: " << error.message << " (daqxctl --help for usage)\n";
    return kUsage;
  } catch (const daqx::config::ConfigError& error) {
    for (const std::string& message : error.messages()) std::cerr << "daqxctl: " << message << "\n";
    return kUsage;
  } catch (const std::exception& error) {
    std::cerr << "daqxctl: " << error.what() << "\n";
    return kUsage;
  }
}
