// daqx-executive: plays one context of a partition: loads its modules, hosts its applications and
// transports, serves HTTP control on the context URL, and shuts down cleanly on SIGINT or SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "daqx/executive/control_server.hpp"
#include "daqx/executive/executive.hpp"
#include "daqx/executive/partition.hpp"

namespace {

constexpr int kExitConfig = 2;
constexpr int kExitRuntime = 1;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: daqx-executive --config PARTITION.xml --context http://HOST:PORT [--inbox FRAMES]\n"
               "       daqx-executive --list-params MODULE\n"
               "       daqx-executive --capabilities MODULE [NAME=VALUE ...]\n"
               "  -c, --config FILE      the partition (XML)\n"
               "  -x, --context URL      which context of the partition this process plays\n"
               "      --inbox FRAMES     frames each application may have queued (power of two, default 4096)\n"
               "      --list-params M    print every parameter of module M (name, type, default, unit, help)\n"
               "      --capabilities M   print, as JSON, what each transport of module M offers with the parameters\n"
               "                         given after it (NAME=VALUE), or with its defaults\n"
               "Exit codes: 0 clean shutdown, 1 runtime error, 2 bad configuration or usage.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string context_url;
  std::string list_module;
  std::string capabilities_module;
  std::vector<std::string> capabilities_params;
  std::size_t inbox = 4096;
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
      inbox = std::strtoul(value().c_str(), nullptr, 10);
    } else if (a == "--list-params") {
      list_module = value();
    } else if (a == "--capabilities") {
      capabilities_module = value();
      while (i + 1 < args.size() && args[i + 1].find('=') != std::string::npos) capabilities_params.push_back(args[++i]);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "daqx-executive: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return kExitConfig;
    }
  }

  if (!capabilities_module.empty()) {
    try {
      std::puts(daqx::Executive::transport_capabilities(capabilities_module, capabilities_params).c_str());
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "daqx-executive: %s\n", e.what());
      return kExitConfig;
    }
  }
  if (!list_module.empty()) {
    try {
      std::fputs(daqx::Executive::list_params(list_module).c_str(), stdout);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "daqx-executive: %s\n", e.what());
      return kExitConfig;
    }
  }
  if (config_path.empty() || context_url.empty()) {
    usage(stderr);
    return kExitConfig;
  }

  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a peer closing a socket is an event, not a reason to die

  try {
    daqx::config::Partition partition = daqx::config::load_partition(config_path);
    const daqx::config::ContextConfig* context = partition.find_context(context_url);
    // The context URL's own address unless the partition says bind="any": a control port open on every interface
    // would be reachable from networks the URL never meant.
    const bool any_interface = partition.control.bind == daqx::config::ControlConfig::Bind::any;
    std::string host = context != nullptr && !any_interface ? context->host : "0.0.0.0";
    std::uint16_t port = context != nullptr ? context->port : 0;
    daqx::ControlServerSecurity security;
    try {
      security = daqx::ControlServerSecurity::from(partition);
    } catch (const std::runtime_error& e) {  // a token file that cannot be used is a configuration mistake
      std::fprintf(stderr, "daqx-executive: %s\n", e.what());
      return kExitConfig;
    }
    daqx::Executive executive(std::move(partition), context_url, inbox);
    daqx::ControlServer server(executive.control(), host, port, 2, security);
    server.start();
    std::printf("daqx-executive: %s ready (pid %d), control on port %u (%s%s)\n", context_url.c_str(),
                static_cast<int>(getpid()), server.port(), any_interface ? "every interface" : host.c_str(),
                security.token.empty()                ? ", open"
                : security.reads_need_token           ? ", token for every request"
                                                      : ", token for changes");
    std::fflush(stdout);
    int received = 0;
    sigwait(&stop_signals, &received);
    std::printf("daqx-executive: %s stopping (%s)\n", context_url.c_str(), strsignal(received));
    std::fflush(stdout);
    executive.shutdown();
    server.stop();
    return 0;
  } catch (const daqx::config::ConfigError& e) {
    for (const std::string& m : e.messages()) std::fprintf(stderr, "%s\n", m.c_str());
    return kExitConfig;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daqx-executive: %s\n", e.what());
    return kExitRuntime;
  }
}
