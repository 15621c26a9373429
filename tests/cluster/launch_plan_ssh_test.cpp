// daqx-launch's plan before start over ssh: every host's executive answers its host's limits, and a host whose
// ephemeral port range holds a context's listening port (a setting of its own namespace) refuses the partition,
// by name, before anything is copied or started.
#include <catch2/catch.hpp>

#include <string>

#include "../support/cluster_evb.hpp"
#include "../support/executive_process.hpp"
#include "../support/launcher_process.hpp"
#include "../support/netns.hpp"
#include "../support/process.hpp"
#include "../support/ssh_hosts.hpp"

using namespace daqx::test;
using namespace std::chrono_literals;

TEST_CASE("daqx-launch --plan --engine ssh asks every host for its limits and refuses the partition where one host's "
          "ephemeral port range holds a context's port, naming the context and the range",
          "[cluster][ssh][launch]") {
  skip_test_unless_netns_available();
  skip_test_unless_ssh_available();
  VirtualCluster cluster(kClusterEvbHosts);
  SshHosts ssh(cluster);
  const std::string partition =
      cluster_evb_partition(cluster, "evb-ssh-plan", [](PartitionBuilder& built) { launch_through(built, "ssh"); });
  const auto plan = [&] {
    LauncherProcess launcher({"--config", partition, "--ssh-config", ssh.client_config_path(), "--plan"});
    const std::optional<int> exit_code = launcher.wait(60s);
    return std::make_pair(exit_code, launcher.output());
  };
  const auto [fits, fits_output] = plan();
  INFO(fits_output);
  REQUIRE(fits == 0);
  for (int h = 0; h < kClusterEvbHosts; ++h) CHECK_THAT(fits_output, Catch::Contains("host " + cluster.address(h) + " ("));
  CHECK_THAT(fits_output, Catch::Contains("the partition fits its hosts"));

  // Host 3's range now holds the control port of its context (ports are the same on every host).
  const std::string range = std::to_string(kClusterEvbControlPort - 50) + " " + std::to_string(kClusterEvbControlPort + 49);
  REQUIRE(cluster.run(3, {"sh", "-c", "echo '" + range + "' > /proc/sys/net/ipv4/ip_local_port_range"}).exit_code == 0);
  const auto [refused, refused_output] = plan();
  INFO(refused_output);
  REQUIRE(refused == 2);
  CHECK_THAT(refused_output, Catch::Contains("does not fit: context " + cluster.url(3, kClusterEvbControlPort) +
                                             ": listening port: needs port " + std::to_string(kClusterEvbControlPort)));
  CHECK_THAT(refused_output, Catch::Contains("net.ipv4.ip_local_port_range"));
  CHECK_THAT(refused_output, !Catch::Contains("does not fit: context " + cluster.url(2, kClusterEvbControlPort)));
  for (int h = 0; h < kClusterEvbHosts; ++h) CHECK(executives_on(cluster, h).empty());
}
