// daqx-test-ssh-hosts N: the test harness's simulated hosts (a network namespace and a real sshd each) for a
// program outside the tests, such as the launch benchmark (bench/launch_scale.py). Prints one JSON line,
// {"ssh_config": PATH, "addresses": ["10.233.X.1", ...]}, then keeps the hosts until its standard input closes
// or it gets SIGTERM/SIGINT, and removes them (and whatever runs in them) on the way out.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "../support/netns.hpp"
#include "../support/ssh_hosts.hpp"

namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  char* end = nullptr;
  const long hosts = argc == 2 ? std::strtol(argv[1], &end, 10) : 0;
  if (argc != 2 || *end != '\0' || hosts < 1 || hosts > 200) {
    std::fprintf(stderr, "usage: daqx-test-ssh-hosts N   (1 to 200 hosts)\n");
    return 2;
  }
  if (!daqx::test::netns_unavailable_reason().empty() || !daqx::test::ssh_unavailable_reason().empty()) {
    std::fprintf(stderr, "daqx-test-ssh-hosts: cannot run here: %s%s\n", daqx::test::netns_unavailable_reason().c_str(),
                 daqx::test::ssh_unavailable_reason().c_str());
    return 77;
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  try {
    daqx::test::VirtualCluster cluster(static_cast<int>(hosts));
    daqx::test::SshHosts ssh(cluster);
    std::string line = "{\"ssh_config\": \"" + ssh.client_config_path() + "\", \"addresses\": [";
    for (int h = 0; h < cluster.size(); ++h) line += (h ? ", \"" : "\"") + cluster.address(h) + "\"";
    line += "]}\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    // Until stdin closes (the driver ended, however it ended) or a signal: the destructors remove the hosts.
    while (!g_stop) {
      pollfd input{STDIN_FILENO, POLLIN, 0};
      if (poll(&input, 1, 200) > 0) {
        char buffer[256];
        if (read(STDIN_FILENO, buffer, sizeof buffer) <= 0) break;
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "daqx-test-ssh-hosts: %s\n", error.what());
    return 1;
  }
  return 0;
}
