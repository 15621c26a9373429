// daqx-executive: plays one context of a partition: loads its modules, hosts its applications and
// transports, serves HTTP control on the context URL, and shuts down cleanly on SIGINT or SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daqx/control/module_listing.hpp"
#include "daqx/control/control_server.hpp"
#include "daqx/executive/executive.hpp"
#include "daqx/control/executive_identity.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/control/partition_view.hpp"
#include "daqx/services/log.hpp"
#include "daqx/services/number_text.hpp"
#include "daqx/services/text.hpp"
#include "daqx/services/log_writer.hpp"
#include "daqx/services/version.hpp"
#include "crash_report.hpp"

namespace {

constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 1;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: daqx-executive --config PARTITION.xml --context http://HOST:PORT [--inbox FRAMES]\n"
               "                      [--log-level LEVEL] [--log-format FORMAT] [--launch-instance ID]\n"
               "       daqx-executive --check --config PARTITION.xml [--context URL]\n"
               "       daqx-executive --host-limits\n"
               "       daqx-executive --list-params [MODULE ...] [--json]\n"
               "       daqx-executive --capabilities MODULE [NAME=VALUE ...]\n"
               "  -c, --config FILE      the partition (XML)\n"
               "  -x, --context URL      which context of the partition this process plays\n"
               "      --inbox FRAMES     frames each application may have queued (a power of two from 2 to 16777216,\n"
               "                         decimal, default 4096)\n"
               "      --stop-on-stdin-eof  shut down (as on SIGTERM) when standard input ends: a launcher holds it open,\n"
               "                         so its end, or the end of the ssh session carrying it, stops this executive\n"
               "      --launch-instance ID  the launch this process belongs to (1 to 64 of 0-9, a-z, A-Z, '-'), shown\n"
               "                         with its pid in GET /api/executive: daqx-launch gives it to what it starts\n"
               "                         and drives only the executives that answer with its own\n"
               "      --log-level L      debug, info (default), warning or error: lines below it are dropped\n"
               "                         (or the environment's DAQX_LOG_LEVEL)\n"
               "      --log-format F     text (default) or json, one object per line (or DAQX_LOG_FORMAT)\n"
               "      --check            check the partition and exit: load the modules of the context (of every\n"
               "                         context without --context), check classes, protocols, parameters and\n"
               "                         selectors against them; opens no port. Exit 0 and the connection plan\n"
               "                         (connections and descriptors per context) and the plan before start (per\n"
               "                         context and in total: connections, descriptors, receive, pool, registered\n"
               "                         and huge-page memory, threads, listening ports), or 2 with file:line:\n"
               "                         reason. With --context, which says this host runs it, also this host's\n"
               "                         limits (open files, locked memory, huge pages, ephemeral port range) and\n"
               "                         exit 2 when the context does not fit them, naming resource and limit\n"
               "      --host-limits      print this host's limits as one line (what daqx-launch asks each host)\n"
               "      --list-params M... print every parameter of the modules (name, type, default, unit, bounds,\n"
               "                         allowed values, help), and the parameters every application has; without\n"
               "                         a module, of every module in the module path\n"
               "      --json             with --list-params: print it as JSON, for tools (--list-params=json too)\n"
               "      --capabilities M   print, as JSON, what each transport of module M offers with the parameters\n"
               "                         given after it (NAME=VALUE), or with its defaults\n"
               "      --version          print the version and exit\n"
               "Exit codes: 0 clean shutdown, 1 runtime error, 2 bad configuration or usage.\n");
}

// Turns the end of standard input into a SIGTERM to this process, which main's sigwait takes like any other
// stop request. The launcher keeps the other end open for the executive's whole life; when the launcher dies or
// the ssh session between them breaks, the executive stops instead of running on unsupervised.
void stop_when_stdin_ends() {
  std::thread([] {
    char buffer[256];
    for (;;) {
      const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    kill(getpid(), SIGTERM);
  }).detach();
}

// A log option from the command line, else from the environment (how daqx-launch passes it on), else the
// default; a value that is not one of the names is a usage error.
template <typename Value, typename Parse>
Value log_option(const std::string& given, const char* option, const char* variable, Parse parse, Value fallback) {
  std::string text = given;
  std::string source = option;
  if (text.empty()) {
    const char* environment = std::getenv(variable);
    if (environment == nullptr || *environment == '\0') return fallback;
    text = environment;
    source = variable;
  }
  const std::optional<Value> parsed = parse(text);
  if (!parsed) {
    std::fprintf(stderr, "daqx-executive: %s: unknown value '%s'\n", source.c_str(), text.c_str());
    usage(stderr);
    std::exit(kExitConfig);
  }
  return *parsed;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string context_url;
  std::vector<std::string> list_modules;
  bool list_params = false;
  bool list_json = false;
  bool check_only = false;
  std::string capabilities_module;
  std::vector<std::string> capabilities_params;
  std::size_t inbox = 4096;
  bool stop_on_stdin_eof = false;
  std::string log_level_text;
  std::string log_format_text;
  std::string instance;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "daqx-executive: %s needs a value\n", a.c_str());
        std::exit(kExitConfig);
      }
      return args[++i];
    };
    if (a == "-c" || a == "--config") {
      config_path = value();
    } else if (a == "-x" || a == "--context") {
      context_url = value();
    } else if (a == "--inbox") {
      const std::string text = value();
      // Up to 2^24 frames: past that the queue's cells alone are gigabytes.
      const daqx::numbers::Parsed<std::size_t> parsed = daqx::numbers::parse<std::size_t>(text, 2, std::size_t{1} << 24);
      if (!parsed || (*parsed & (*parsed - 1)) != 0) {
        std::fprintf(stderr, "daqx-executive: --inbox (frames, a power of two from 2 to 16777216): %s\n",
                     parsed ? (daqx::strings::quoted(text) + " is not a power of two").c_str() : parsed.error.c_str());
        std::exit(kExitConfig);
      }
      inbox = *parsed;
    } else if (a == "--stop-on-stdin-eof") {
      stop_on_stdin_eof = true;
    } else if (a == "--launch-instance") {
      instance = value();
      if (!daqx::is_launch_instance(instance)) {
        std::fprintf(stderr, "daqx-executive: --launch-instance '%s' is not 1 to %zu of 0-9, a-z, A-Z and '-'\n",
                     instance.c_str(), daqx::kMaxLaunchInstance);
        return kExitConfig;
      }
    } else if (a == "--log-level") {
      log_level_text = value();
    } else if (a == "--log-format") {
      log_format_text = value();
    } else if (a == "--list-params" || a == "--list-params=json") {
      list_params = true;
      if (a == "--list-params=json") list_json = true;
      while (i + 1 < args.size() && args[i + 1].substr(0, 1) != "-") list_modules.push_back(args[++i]);
    } else if (a == "--json") {
      list_json = true;
    } else if (a == "--check") {
      check_only = true;
    } else if (a == "--host-limits") {
      std::printf("%s\n", daqx::HostLimits::here().text().c_str());
      return 0;
    } else if (a == "--capabilities") {
      capabilities_module = value();
      while (i + 1 < args.size() && args[i + 1].find('=') != std::string::npos) capabilities_params.push_back(args[++i]);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("daqx-executive %s\n", daqx::version_line());
      return 0;
    } else {
      std::fprintf(stderr, "daqx-executive: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return kExitConfig;
    }
  }

  if (!capabilities_module.empty()) {
    try {
      std::puts(daqx::transport_capabilities_json(
                    daqx::Executive::transport_capabilities(capabilities_module, capabilities_params))
                    .c_str());
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "daqx-executive: %s\n", e.what());
      return kExitConfig;
    }
  }
  if (list_json && !list_params) {
    std::fprintf(stderr, "daqx-executive: --json goes with --list-params\n");
    usage(stderr);
    return kExitConfig;
  }
  if (list_params) {
    try {
      std::vector<std::string> not_loaded;
      const daqx::ModuleListing modules = daqx::Executive::list_modules(list_modules, &not_loaded);
      const std::string listing = list_json ? daqx::module_listing_json(modules) : daqx::module_listing_text(modules);
      // Before the listing, so the two never interleave where both go to one place.
      for (const std::string& reason : not_loaded) std::fprintf(stderr, "daqx-executive: skipped: %s\n", reason.c_str());
      std::fputs(listing.c_str(), stdout);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "daqx-executive: %s\n", e.what());
      return kExitConfig;
    }
  }
  if (check_only) {
    if (config_path.empty()) {
      std::fprintf(stderr, "daqx-executive: --check needs --config PARTITION.xml\n");
      usage(stderr);
      return kExitConfig;
    }
    // Plain messages on stderr, one per mistake, as the executive would log them but without the log prefix:
    // an editor or a script reads "file:line: reason" directly.
    try {
      const daqx::config::Partition partition = daqx::config::load_partition(config_path);
      const std::vector<std::string> problems = daqx::Executive::check(partition, context_url);
      for (const std::string& problem : problems) std::fprintf(stderr, "%s\n", problem.c_str());
      if (!problems.empty()) return kExitConfig;
      std::printf("%s: partition '%s' is valid (%zu context%s checked)\n", config_path.c_str(), partition.name.c_str(),
                  context_url.empty() ? partition.contexts.size() : std::size_t{1},
                  context_url.empty() && partition.contexts.size() != 1 ? "s" : "");
      for (const std::string& line : daqx::Executive::connection_plan(partition, context_url))
        std::printf("%s\n", line.c_str());
      // The plan before start: every context's needs, or the one named, which this host runs: then against this
      // host's limits, and refused (exit 2) when it does not fit.
      std::vector<daqx::ContextNeeds> needs = daqx::Executive::plan_resources(partition);
      if (!context_url.empty())
        std::erase_if(needs, [&](const daqx::ContextNeeds& n) { return n.url != context_url; });
      for (const std::string& line : daqx::describe_needs(needs)) std::printf("%s\n", line.c_str());
      if (context_url.empty()) return 0;
      const daqx::HostLimits here = daqx::HostLimits::here();
      std::printf("%s\n", daqx::describe_limits(here).c_str());
      bool fits = true;
      for (const daqx::PlanShortfall& shortfall : daqx::check_fit(needs, [&](const std::string&) { return &here; })) {
        std::fprintf(stderr, "%s%s\n", shortfall.refused ? "" : "warning: ", shortfall.text().c_str());
        fits = fits && !shortfall.refused;
      }
      return fits ? 0 : kExitConfig;
    } catch (const daqx::config::ConfigError& e) {
      for (const std::string& m : e.messages()) std::fprintf(stderr, "%s\n", m.c_str());
      return kExitConfig;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "daqx-executive: %s\n", e.what());
      return kExitConfig;
    }
  }
  if (config_path.empty() || context_url.empty()) {
    usage(stderr);
    return kExitConfig;
  }
  const auto level = log_option(log_level_text, "--log-level", "DAQX_LOG_LEVEL",
                                [](std::string_view t) { return daqx::log_level_from_string(t); },
                                daqx::LogLevel::info);
  const auto format = log_option(log_format_text, "--log-format", "DAQX_LOG_FORMAT",
                                 [](std::string_view t) { return daqx::log_format_from_string(t); },
                                 daqx::LogFormat::text);
  // From here on every line this process prints is a log line: time, level, context, component.
  daqx::set_log_level(level);
  daqx::set_log_sink(daqx::make_log_writer(STDERR_FILENO, context_url, format));
  const auto say = [](daqx::LogLevel l, const std::string& message) { daqx::log(l, "executive", message); };

  daqx::install_crash_report();
  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a peer closing a socket is an event, not a reason to die
  if (stop_on_stdin_eof) stop_when_stdin_ends();
  daqx::set_launch_instance(instance);  // before the control server answers anyone

  try {
    daqx::config::Partition partition = daqx::config::load_partition(config_path);
    const daqx::config::ContextConfig* context = partition.find_context(context_url);
    // The context URL's own address unless the partition says bind="any": a control port open on every interface
    // would be reachable from networks the URL never meant.
    const bool any_interface = partition.control.bind == daqx::config::ControlConfig::Bind::any;
    std::string host = context != nullptr && !any_interface ? context->host : "0.0.0.0";
    std::uint16_t port = context != nullptr ? context->port : 0;
    daqx::ControlServerSecurity security;
    daqx::ControlAccess access;  // what the partition view presents to the other executives
    try {
      security = daqx::ControlServerSecurity::from(partition);
      access = daqx::ControlAccess::from(&partition);
    } catch (const std::runtime_error& e) {  // a token file that cannot be used is a configuration mistake
      say(daqx::LogLevel::error, e.what());
      return kExitConfig;
    }
    const daqx::config::Partition whole = partition;  // the executive keeps its own; the view polls every context
    daqx::Executive executive(std::move(partition), context_url, inbox);
    // Every executive serves the whole partition's page (/partition), polling the others only while it is watched.
    daqx::PartitionView view(whole, access);
    view.set_local(context_url, executive.control());
    view.start();
    daqx::ControlServer server(executive.control(), host, port, daqx::kControlServerThreads, security, &view);
    server.start();
    say(daqx::LogLevel::info, "ready (pid " + std::to_string(getpid()) + "), control on port " +
                                  std::to_string(server.port()) + " (" + (any_interface ? "every interface" : host) +
                                  (security.token.empty()            ? ", open)"
                                   : security.reads_need_token       ? ", token for every request)"
                                                                     : ", token for changes)"));
    int received = 0;
    sigwait(&stop_signals, &received);
    say(daqx::LogLevel::info, std::string("stopping (") + strsignal(received) + ")");
    view.stop();
    server.begin_stop();  // before the transports go: a connect wait must end 503, not see no connections as all up
    executive.shutdown();
    server.stop();
    return 0;
  } catch (const daqx::config::ConfigError& e) {
    for (const std::string& m : e.messages()) say(daqx::LogLevel::error, m);
    return kExitConfig;
  } catch (const std::exception& e) {
    say(daqx::LogLevel::error, e.what());
    return kExitRuntime;
  }
}
