// daqx-launch: starts every context of a partition on the host its URL names, through an engine (this machine,
// OpenSSH or Slurm), waits until all answer on their control port, optionally drives and watches a run,
// restarts contexts by their restart rule and brings them back into the run, and stops them all cleanly.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daqx/control/control_client.hpp"
#include "daqx/control/dashboard_server.hpp"
#include "daqx/control/executive_identity.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/executive/run_number.hpp"
#include "daqx/services/number_text.hpp"
#include "daqx/services/version.hpp"
#include "daqx/services/open_file_limit.hpp"
#include "address_owner.hpp"
#include "engine.hpp"
#include "launch_plan.hpp"
#include "partition_drive.hpp"
#include "run_command.hpp"
#include "run_control.hpp"
#include "slurm_allocation.hpp"
#include "supervisor.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace daqx::launch;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void usage(FILE* out) {
  std::fprintf(out,
               "usage: daqx-launch --config PARTITION.xml [--engine local|ssh|slurm] [--log-dir DIR]\n"
               "                   [--drive [--connect]] [--run SECONDS] [--ready-timeout SECONDS]\n"
               "                   [--fanout N] [--transition-timeout SECONDS] [--stop-timeout SECONDS]\n"
               "                   [--run-number N | --run-file FILE] [--token-file FILE] [--ca-file FILE]\n"
               "                   [--executive PATH] [--log-level LEVEL] [--log-format text|json]\n"
               "                   [--ssh-config FILE] [--ssh-option NAME=VALUE]...\n"
               "                   [--slurm-placement hosts|slurm] [--dashboard [HOST:]PORT | --no-dashboard]\n"
               "       daqx-launch --config PARTITION.xml --plan [--engine local|ssh|slurm] [--ssh-config FILE]...\n"
               "       daqx-launch --config PARTITION.xml --write-sbatch FILE [--sbatch-option OPTION]... [-- ARGS]\n"
               "       daqx-launch --version | --help\n"
               "  Starts one daqx-executive per context of the partition on the host its URL names, through the\n"
               "  engine (--engine, else the partition's <Launch engine>, else local): local runs it here, ssh over\n"
               "  OpenSSH in batch mode (the user's ssh configuration, or --ssh-config), slurm as tasks of the\n"
               "  current allocation. Waits until each answers on its control URL within --ready-timeout (default\n"
               "  20 s) of its own start; each context's output goes to DIR/HOST_PORT.log (default daqx-logs).\n"
               "  --fanout N (below) also bounds the start: ssh copies the partition to N hosts at a time, and N\n"
               "  contexts are checked for their control port at a time. The first host or context that fails\n"
               "  stops the launch, named, and whatever started is stopped.\n"
               "  With --drive it configures and enables every context, shows every application's state and rates\n"
               "  each second (a table redrawn in place on a terminal, one line per application per second\n"
               "  otherwise), stops and halts them at the end and prints the run's summary (every counter in\n"
               "  DIR/run-N-counters.txt). It runs until\n"
               "  --run seconds have passed (default: until Ctrl-C / SIGTERM / SIGHUP), then stops every executive\n"
               "  (stop, halt, then SIGTERM, SIGKILL after --stop-timeout, default 15 s). Contexts that end on their\n"
               "  own are restarted by the partition's <Launch><Restart> rules and brought back into the run; one\n"
               "  that ends for good is lost without ending the run as far as its <Launch><Expendable> rules allow.\n"
               "  The run enabled with --drive gets --run-number N, or the next number of the run file (--run-file,\n"
               "  else $DAQX_RUN_FILE, else DIR/run-number), which the launcher owns.\n"
               "  Every request to an executive carries the bearer token of --token-file (else $DAQX_TOKEN_FILE, else\n"
               "  the partition's <Control tokenFile>) and checks an https:// executive against --ca-file (else\n"
               "  $DAQX_CA_FILE, else <Control ca>, else the system's CAs).\n"
               "  slurm: each context runs on the allocation's node its host names (by name, host name or address);\n"
               "  --slurm-placement slurm instead maps the partition's hosts, in order, onto the allocation's nodes\n"
               "  and rewrites the partition (DIR/partition-placed.xml). --write-sbatch writes the batch script that\n"
               "  runs the partition through Slurm with this launcher and ARGS, then exits.\n"
               "  It drives only the executives it starts: each is given this launch's instance (random, printed at\n"
               "  start) and counts as up only when its URL answers GET /api/executive with it.\n"
               "  Before anything starts, every context's control address is tried (a TCP connection, all at once\n"
               "  over --fanout, 2 s each): one that something already serves (another launch of the partition, an\n"
               "  executive started by hand, any program) is refused, naming context, address and what answers\n"
               "  there, and nothing starts (exit 2). A URL answering as another process later fails the launch\n"
               "  (exit 1); with --drive, contexts whose state someone else changed (another launcher, daqxctl)\n"
               "  are named, end the run and make the exit code 1.\n"
               "  Before anything starts it makes the plan: per context and in total the connections, file\n"
               "  descriptors, receive, pool and registered memory, huge pages, threads and listening ports the\n"
               "  partition will use, from its declared parameters, against each host's limits (open files, locked\n"
               "  memory, huge pages, the ephemeral port range), asked of every host through the engine (its\n"
               "  executive's --host-limits; local: this machine's). A partition that does not fit is refused, naming\n"
               "  context, resource, need and limit (exit 2). --plan prints the plan and exits: 0 fits, 2 does not\n"
               "  (or a host could not be asked).\n"
               "  With --connect, every transport connection is opened after configure and must be up (within\n"
               "  30 s) before anything is enabled.\n"
               "  Transitions go in phases: consecutive contexts of the partition file that host the same set of\n"
               "  application classes form one phase; configure and enable take the phases in file order (a phase\n"
               "  in which a context fails ends the transition), stop and halt in reverse (on past failures). The\n"
               "  contexts of a phase are asked at once, at most --fanout N at a time (default 64, 1 to 1024; the\n"
               "  connect and the live table too, all over 4 threads), each\n"
               "  answering within --transition-timeout seconds (default 60) or named as not answering; the\n"
               "  others go on. Each transition ends with a line per context that did not do it and a total line\n"
               "  (\"configure: 64/64 contexts in 1.02 s (1 phase)\").\n"
               "  While it runs it serves the partition's live page (states, rates, pools, connections of every\n"
               "  context) at http://HOST:PORT/partition and its JSON at /api/partition: by default on 127.0.0.1 and\n"
               "  a free port, printed at start; --dashboard [HOST:]PORT chooses (0.0.0.0: every interface),\n"
               "  --no-dashboard serves none.\n"
               "Numbers: decimal, the whole argument (no blank, '+' or 0x; seconds may have a fraction, and\n"
               "  --transition-timeout is 0.001 to 86400): docs/configuration.md, \"Numbers\".\n"
               "Exit codes: 0 all clean (contexts lost within the allowance included), 1 a context failed to start\n"
               "            or answered as another process, died for good beyond the allowance, an application\n"
               "            failed, a stop or halt was not done, or someone else drove the run,\n"
               "            2 usage or configuration, or a control address already served by another process.\n");
}

std::string self_directory() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return ".";
  const std::string full(path, static_cast<std::size_t>(n));
  return full.substr(0, full.rfind('/'));
}

struct Options {
  std::string config_path;
  std::string engine;
  std::string log_dir = "daqx-logs";
  std::string executive;  // empty: the one beside this program (the same path on every host)
  bool drive = false;
  bool connect = false;
  DriveSettings drive_settings;  // --fanout, --transition-timeout
  bool plan = false;  // --plan: print the plan before start and exit
  double run_seconds = 0;
  double ready_timeout = 20;
  double stop_timeout = 15;
  std::uint64_t run_number = 0;  // 0: the next number of the run file
  std::string run_file;
  std::vector<std::string> executive_arguments;  // --log-level, --log-format, passed on
  SshOptions ssh;
  daqx::ControlAccess::Files access;  // --token-file, --ca-file
  std::string slurm_placement = "hosts";
  std::string sbatch_path;
  std::vector<std::string> sbatch_options;
  std::vector<std::string> sbatch_arguments;  // after "--": what the batch script gives daqx-launch
  bool dashboard = true;
  std::string dashboard_host = "127.0.0.1";
  std::uint16_t dashboard_port = 0;  // 0: a free one
};

// --dashboard [HOST:]PORT; false when it is not that.
bool parse_dashboard(const std::string& text, Options& options) {
  const std::size_t colon = text.rfind(':');
  const std::string port = colon == std::string::npos ? text : text.substr(colon + 1);
  if (colon != std::string::npos) options.dashboard_host = text.substr(0, colon);
  const daqx::numbers::Parsed<std::uint16_t> parsed = daqx::numbers::parse<std::uint16_t>(port);
  if (!parsed || options.dashboard_host.empty()) return false;
  options.dashboard_port = *parsed;
  return true;
}

// Everything one context needs, from the partition's <Launch><Host> rule for its host and the options.
std::vector<ContextLaunch> launches(const daqx::config::Partition& partition, const Options& options, const std::string& log_dir,
                                    const std::string& instance) {
  std::vector<ContextLaunch> contexts;
  for (const daqx::config::ContextConfig& context : partition.contexts) {
    ContextLaunch launch;
    launch.context = &context;
    launch.executive = options.executive.empty() ? self_directory() + "/daqx-executive" : options.executive;
    if (const daqx::config::LaunchHostRule* rule = partition.launch.host_rule(context.host)) {
      if (!rule->executive.empty())
        launch.executive = rule->executive;
      else if (!rule->prefix.empty())
        launch.executive = rule->prefix + "/bin/daqx-executive";
      launch.environment = rule->environment;
      launch.ssh_target = rule->ssh_target;
      launch.work_dir = rule->work_dir;
    }
    launch.extra_arguments = options.executive_arguments;
    launch.log_path = log_dir + "/" + context.host + "_" + std::to_string(context.port) + ".log";
    launch.instance = instance;
    contexts.push_back(std::move(launch));
  }
  return contexts;
}

// Before anything starts: every context whose control address a process already serves (another launch of this
// partition, an executive left behind, any program) named, over the launcher's request pool; false when one is.
bool control_addresses_free(const daqx::config::Partition& partition, daqx::ControlRequestPool& requests) {
  constexpr auto kProbeDeadline = std::chrono::seconds(2);
  std::vector<std::string> urls;
  for (const daqx::config::ContextConfig& context : partition.contexts) urls.push_back(context.url);
  const std::vector<AddressInUse> in_use = addresses_in_use(urls, requests, kProbeDeadline);
  for (const AddressInUse& context : in_use) {
    const daqx::config::ContextConfig* config = partition.find_context(context.url);
    std::fprintf(stderr, "daqx-launch: context %s: its control address %s:%u is served by another process, %s\n",
                 context.url.c_str(), config->host.c_str(), unsigned{config->port}, context.by.c_str());
  }
  if (in_use.empty()) return true;
  std::fprintf(stderr, "daqx-launch: %zu of %zu control addresses of partition '%s' are in use: nothing started (this "
                       "launcher drives only executives it starts: stop what serves them first; docs/operations.md, "
                       "\"Which executives a launcher drives\")\n",
               in_use.size(), urls.size(), partition.name.c_str());
  return false;
}

std::string absolute(const std::string& path) {
  std::error_code error;
  const std::filesystem::path full = std::filesystem::absolute(path, error);
  return error ? path : full.lexically_normal().string();
}

}  // namespace

int main(int argc, char** argv) {
  // A connection per context for the launcher too (--drive, the dashboard): the soft limit up to the hard one.
  daqx::raise_open_file_limit();
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "daqx-launch: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    // An option's number, by the strict syntax of every number daqx takes (daqx/services/number_text.hpp).
    auto number = [&]<typename Number>(std::string_view what, const daqx::numbers::Parsed<Number>& parsed) -> Number {
      if (!parsed) {
        std::fprintf(stderr, "daqx-launch: %s (%.*s): %s\n", a.c_str(), static_cast<int>(what.size()), what.data(),
                     parsed.error.c_str());
        std::exit(2);
      }
      return *parsed;
    };
    auto seconds = [&] { return number("seconds", daqx::numbers::parse_real(value(), 0)); };
    if (a == "-c" || a == "--config") options.config_path = value();
    else if (a == "--engine") options.engine = value();
    else if (a == "--log-dir") options.log_dir = value();
    else if (a == "--executive") options.executive = value();
    else if (a == "--drive") options.drive = true;
    else if (a == "--plan") options.plan = true;
    else if (a == "--connect") options.connect = true;
    else if (a == "--run") options.run_seconds = seconds();
    else if (a == "--ready-timeout") options.ready_timeout = seconds();
    else if (a == "--stop-timeout") options.stop_timeout = seconds();
    else if (a == "--transition-timeout") {
      const double limit = number("seconds, 0.001 to 86400", daqx::numbers::parse_real(value(), 0.001, 86400));
      options.drive_settings.deadline = std::chrono::milliseconds(static_cast<long long>(limit * 1000));
    }
    else if (a == "--fanout") {
      options.drive_settings.fanout =
          number("contexts asked at once", daqx::numbers::parse<unsigned>(value(), 1, daqx::kMaxControlFanout));
    }
    else if (a == "--run-number") {
      options.run_number = number("a run number", daqx::numbers::parse_unsigned(value(), 1, daqx::kMaxRunNumber));
    }
    else if (a == "--run-file") options.run_file = value();
    else if (a == "--log-level" || a == "--log-format") options.executive_arguments.insert(options.executive_arguments.end(), {a, value()});
    else if (a == "--slurm-placement") options.slurm_placement = value();
    else if (a == "--write-sbatch") options.sbatch_path = value();
    else if (a == "--sbatch-option") options.sbatch_options.push_back(value());
    else if (a == "--") { options.sbatch_arguments.assign(argv + i + 1, argv + argc); break; }
    else if (a == "--token-file") options.access.token_file = value();
    else if (a == "--ca-file") options.access.ca_file = value();
    else if (a == "--dashboard") {
      const std::string text = value();
      if (!parse_dashboard(text, options)) {
        std::fprintf(stderr, "daqx-launch: --dashboard '%s' is not [HOST:]PORT\n", text.c_str());
        return 2;
      }
    }
    else if (a == "--no-dashboard") options.dashboard = false;
    else if (a == "--ssh-config") options.ssh.config_file = value();
    else if (a == "--ssh-option") options.ssh.options.push_back(value());
    else if (a == "-h" || a == "--help") { usage(stdout); return 0; }
    else if (a == "--version") { std::printf("daqx-launch %s\n", daqx::version_line()); return 0; }
    else { std::fprintf(stderr, "daqx-launch: unknown argument '%s'\n", a.c_str()); usage(stderr); return 2; }
  }
  if (options.config_path.empty()) { usage(stderr); return 2; }
  if (options.run_number != 0 && !options.run_file.empty()) {
    std::fprintf(stderr, "daqx-launch: --run-number and --run-file exclude each other\n");
    return 2;
  }
  if (options.connect && !options.drive) { std::fprintf(stderr, "daqx-launch: --connect goes with --drive\n"); return 2; }

  daqx::config::Partition partition;
  try {
    partition = daqx::config::load_partition(options.config_path);
    daqx::set_default_control_access(daqx::ControlAccess::from(&partition, options.access));  // every request
  } catch (const daqx::config::ConfigError& e) {
    for (const auto& m : e.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return 2;
  } catch (const std::runtime_error& e) {  // a token file that cannot be used
    std::fprintf(stderr, "daqx-launch: %s\n", e.what());
    return 2;
  }
  if (options.slurm_placement != "hosts" && options.slurm_placement != "slurm") {
    std::fprintf(stderr, "daqx-launch: --slurm-placement '%s' is not hosts or slurm\n", options.slurm_placement.c_str());
    return 2;
  }
  if (!options.sbatch_path.empty()) {
    // The script runs this launcher on the partition, by absolute paths: sbatch starts it elsewhere.
    std::vector<std::string> arguments{"--config", absolute(options.config_path)};
    if (options.slurm_placement != "hosts") arguments.insert(arguments.end(), {"--slurm-placement", options.slurm_placement});
    arguments.insert(arguments.end(), options.sbatch_arguments.begin(), options.sbatch_arguments.end());
    std::ofstream script(options.sbatch_path);
    script << sbatch_script(partition, self_directory() + "/daqx-launch", arguments, options.sbatch_options);
    script.close();
    if (!script) {
      std::fprintf(stderr, "daqx-launch: cannot write %s\n", options.sbatch_path.c_str());
      return 1;
    }
    std::printf("daqx-launch: wrote %s: submit it with sbatch\n", options.sbatch_path.c_str());
    return 0;
  }
  const std::string engine_name = !options.engine.empty() ? options.engine
                                  : !partition.launch.engine.empty() ? partition.launch.engine : "local";
  std::unique_ptr<Engine> engine;
  if (engine_name == "local") engine = make_local_engine();
  else if (engine_name == "ssh") {
    options.ssh.fanout = options.drive_settings.fanout;
    engine = make_ssh_engine(options.ssh);
  }
  else if (engine_name != "slurm") { std::fprintf(stderr, "daqx-launch: engine '%s' is not local, ssh or slurm\n", engine_name.c_str()); return 2; }

  // Remote contexts with open control ports: anyone who reaches a port can halt the run. Allowed (a closed
  // network), but said.
  if (engine_name != "local" && daqx::default_control_access().token.empty())
    std::fprintf(stderr, "daqx-launch: warning: no control token (<Control tokenFile>, --token-file or DAQX_TOKEN_FILE): "
                         "the contexts' control ports accept changes from anyone who can reach them (docs/deploying.md)\n");
  const auto make_log_dir = [&] {
    std::error_code made;
    std::filesystem::create_directories(options.log_dir, made);
    if (made)
      std::fprintf(stderr, "daqx-launch: cannot make the log folder %s: %s\n", options.log_dir.c_str(), made.message().c_str());
    return !made;
  };
  if (engine_name == "slurm") {
    if (options.slurm_placement == "slurm" && !make_log_dir()) return 1;  // the placed partition goes there
    try {
      if (options.slurm_placement == "slurm") {
        // Slurm chose the nodes: the partition's hosts become the allocation's nodes, in order.
        const SlurmAllocation allocation = current_allocation();
        const std::string placed = options.log_dir + "/partition-placed.xml";
        for (const auto& [host, node] : place_on_allocation(options.config_path, partition, allocation, placed))
          std::printf("daqx-launch: host %s -> node %s (%s)\n", host.c_str(), node.name.c_str(), node.address.c_str());
        std::fflush(stdout);
        options.config_path = placed;
        partition = daqx::config::load_partition(placed);
      }
      engine = make_slurm_engine({});
    } catch (const LaunchError& error) {
      std::fprintf(stderr, "daqx-launch: %s\n", error.what());
      return 1;
    } catch (const daqx::config::ConfigError& e) {
      for (const auto& m : e.messages()) std::fprintf(stderr, "%s\n", m.c_str());
      return 1;
    }
  }
  // The plan before start: a partition that does not fit its hosts is refused before anything starts (no log
  // folder, no process).
  // This launch's instance: every executive it starts gets it, and only one answering with it is driven.
  const std::string instance = daqx::new_launch_instance();
  std::vector<ContextLaunch> contexts = launches(partition, options, options.log_dir, instance);
  const LaunchPlan launch_plan = make_launch_plan(partition, *engine, contexts);
  if (options.plan) {
    for (const std::string& line : launch_plan.describe()) std::printf("%s\n", line.c_str());
    return launch_plan.fits() && launch_plan.unknown_limits.empty() ? 0 : 2;
  }
  for (const std::string& unknown : launch_plan.unknown_limits)
    std::fprintf(stderr, "daqx-launch: warning: %s: the plan is not checked there\n", unknown.c_str());
  for (const daqx::PlanShortfall& shortfall : launch_plan.shortfalls)
    std::fprintf(stderr, "daqx-launch: %s%s\n", shortfall.refused ? "" : "warning: ", shortfall.text().c_str());
  if (!launch_plan.fits()) {
    std::fprintf(stderr, "daqx-launch: the partition does not fit its hosts: nothing started (daqx-launch --plan shows "
                         "the whole plan)\n");
    return 2;
  }
  // One pool of a few threads sends every request to the contexts, whatever their number: the check of their
  // addresses, transitions, connect, and the polls of the live table and the dashboard, up to --fanout of them in
  // flight at once.
  daqx::ControlRequestPool requests(options.drive_settings.fanout);
  if (!control_addresses_free(partition, requests)) return 2;
  if (!make_log_dir()) return 1;

  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);  // the terminal or the allocation going away: stop in order
  signal(SIGPIPE, SIG_IGN);

  try {
    engine->prepare(absolute(options.config_path), contexts);
  } catch (const LaunchError& error) {
    std::fprintf(stderr, "daqx-launch: %s\n", error.what());
    return 1;
  }

  Target target = Target::started;
  std::optional<std::uint64_t> run_number;
  // A restarted context is brought back to where the others are: configured, connected, enabled in this run.
  auto bring_up = [&](const std::string& url, Target to) {
    if (!transition_one(url, "configure", options.drive_settings, requests)) return false;
    if (to == Target::configured) return true;
    if (options.connect && !connect_one(url, std::chrono::seconds(30), requests)) return false;
    return transition_one(url, "enable", options.drive_settings, requests, run_number);
  };
  // The live page of the partition, from the start: contexts coming up show as such.
  daqx::ContextPoller poller(requests);
  std::unique_ptr<daqx::PartitionView> view;
  std::unique_ptr<daqx::DashboardServer> dashboard;
  if (options.dashboard) {
    try {
      daqx::PartitionViewOptions view_options;
      view_options.poller = &poller;
      view = std::make_unique<daqx::PartitionView>(partition, daqx::default_control_access(), view_options);
      view->start();
      // Reads need the token where the partition says so (<Control reads="token">), as on the executives.
      daqx::ControlServerSecurity security;
      if (partition.control.reads == daqx::config::ControlConfig::Reads::token) {
        security.token = daqx::default_control_access().token;
        security.reads_need_token = !security.token.empty();
      }
      dashboard = std::make_unique<daqx::DashboardServer>(*view, options.dashboard_host, options.dashboard_port, security);
      dashboard->start();
      const std::string& host = options.dashboard_host;
      const std::string shown = host.find(':') == std::string::npos ? host : std::string("[").append(host).append("]");
      std::printf("daqx-launch: dashboard: http://%s:%u/partition\n", shown.c_str(), unsigned{dashboard->port()});
      std::fflush(stdout);
    } catch (const std::runtime_error& error) {
      std::fprintf(stderr, "daqx-launch: dashboard: %s\n", error.what());
      return 1;
    }
  }
  Supervisor supervisor(*engine, contexts, partition.launch,
                        std::chrono::milliseconds(static_cast<long long>(options.ready_timeout * 1000)), bring_up);
  const auto grace = std::chrono::seconds(static_cast<long long>(options.stop_timeout));
  if (!supervisor.start_all([] { return g_stop != 0; }, requests)) {
    supervisor.stop_all(std::chrono::seconds(10));
    return 1;
  }
  std::printf("daqx-launch: %zu contexts of partition '%s' up through %s (logs in %s, launch instance %s)\n",
              contexts.size(), partition.name.c_str(), engine->name().c_str(), options.log_dir.c_str(), instance.c_str());
  std::fflush(stdout);

  const auto up = [&](const std::string& url) { return supervisor.is_up(url); };
  bool healthy = true;
  if (options.drive) {
    // The run number is taken only now: a launch that never gets this far uses none up.
    if (options.run_number != 0) {
      run_number = options.run_number;
    } else {
      const char* from_environment = std::getenv("DAQX_RUN_FILE");
      const std::string path = !options.run_file.empty() ? options.run_file
                               : from_environment != nullptr && *from_environment != '\0' ? from_environment
                                                                                         : options.log_dir + "/run-number";
      try {
        run_number = daqx::RunNumberFile(path).next();
      } catch (const daqx::RunNumberError& error) {
        std::fprintf(stderr, "daqx-launch: no run number: %s\n", error.what());
        supervisor.stop_all(grace);
        return 1;
      }
      std::printf("daqx-launch: run %llu (from %s)\n", static_cast<unsigned long long>(*run_number), path.c_str());
    }
    healthy = transition_all(partition, "configure", options.drive_settings, requests);
    if (healthy) target = Target::configured;
    healthy = healthy &&
              (!options.connect || connect_all(partition, std::chrono::seconds(30), requests)) &&
              transition_all(partition, "enable", options.drive_settings, requests, run_number);
    if (healthy) {
      target = Target::enabled;
      std::printf("daqx-launch: configured and enabled, run %llu\n", static_cast<unsigned long long>(*run_number));
    }
    supervisor.set_target(target);
  }
  const auto start = Clock::now();
  std::optional<RunDisplay> display;
  if (options.drive && healthy) {
    // A first look right after enable: every unit's rates then come from two of its own samples a second apart.
    display.emplace(partition, poller, options.run_seconds, *run_number, &supervisor.expendable());
    supervisor.set_before_message([&] { display->before_message(); });
    healthy = display->sample(0, up);
  }
  auto next_report = start + std::chrono::seconds(1);
  while (!g_stop && healthy) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (options.run_seconds > 0 && elapsed >= options.run_seconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    healthy = supervisor.tick();
    if (display && healthy && Clock::now() >= next_report) {
      next_report += std::chrono::seconds(1);
      healthy = display->sample(std::chrono::duration<double>(Clock::now() - start).count(), up);
    }
  }
  supervisor.set_before_message({});
  // The engine gone under the launcher (the Slurm allocation ended): what ran there is stopped by it already.
  const std::string gone = engine->unavailable();
  if (!gone.empty()) {
    std::fprintf(stderr, "daqx-launch: %s: its contexts are stopped with it\n", gone.c_str());
    healthy = false;
  }
  // Contexts whose state someone else changed while this launcher drove them: said, and the launch is not clean.
  std::vector<std::string> driven_elsewhere;
  if (display) driven_elsewhere = display->driven_elsewhere();
  if (options.drive && gone.empty()) {
    // A stop or halt not done where the launcher had brought the partition to where it goes from is a run not
    // ended cleanly; a refusal there means someone else drove the context meanwhile.
    const bool enabled = target == Target::enabled;
    const bool stopped = transition_all(partition, "stop", options.drive_settings, requests, {}, up,
                                        enabled ? &driven_elsewhere : nullptr) || !enabled;
    // Enabled from the end of enable to the end of stop: stop drains, and what it drains is counted.
    const double enabled_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (display)
      display->summary(enabled_seconds, options.log_dir + "/run-" + std::to_string(*run_number) + "-counters.txt", up);
    const bool configured = target != Target::started;
    const bool halted = transition_all(partition, "halt", options.drive_settings, requests, {}, up,
                                       configured ? &driven_elsewhere : nullptr) || !configured;
    healthy = healthy && stopped && halted;
  }
  std::sort(driven_elsewhere.begin(), driven_elsewhere.end());
  driven_elsewhere.erase(std::unique(driven_elsewhere.begin(), driven_elsewhere.end()), driven_elsewhere.end());
  if (!driven_elsewhere.empty()) healthy = false;
  const bool clean = supervisor.stop_all(grace);
  std::printf("daqx-launch: restarts: %u\n", supervisor.total_restarts());
  for (const Supervisor::Summary& context : supervisor.summary())
    if (context.restarts != 0 || !context.last_failure.empty())
      std::printf("  %-32s %u restart(s), last failure: %s\n", context.url.c_str(), context.restarts,
                  context.last_failure.empty() ? "none" : context.last_failure.c_str());
  for (const std::string& lost : supervisor.expendable().lost()) std::printf("daqx-launch: %s\n", lost.c_str());
  std::string elsewhere;
  for (const std::string& url : driven_elsewhere) elsewhere.append(elsewhere.empty() ? "" : ", ").append(url);
  if (driven_elsewhere.empty())
    std::printf("daqx-launch: all contexts stopped%s\n", clean ? " cleanly" : " (not all cleanly)");
  else
    std::printf("daqx-launch: all contexts stopped%s, but %zu of them were driven outside this launcher (another "
                "launcher, daqxctl or a script changed their state): %s\n",
                clean ? " cleanly" : " (not all cleanly)", driven_elsewhere.size(), elsewhere.c_str());
  return clean && healthy ? 0 : 1;
}
