// The machine's processes as /proc shows them, and the trees below given roots: what tests use to find and stop
// everything a daemon (sshd, slurmstepd) started on their simulated hosts, whoever its parent is now.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace daqx::test {

struct ProcessEntry {
  pid_t parent = 0;
  // comm: the executable's name, which setproctitle (slurmstepd uses it) leaves alone.
  std::string command;
  // Clock ticks after boot; tells a process from a later one that was given the same pid.
  unsigned long long start_time = 0;
  // The inode of its network namespace (/proc/PID/ns/net), 0 when it cannot be read.
  ino_t network_namespace = 0;
};

// Every process now. A process that ends while it is read is left out.
std::map<pid_t, ProcessEntry> process_table();

// Every process whose command line has `argument` as one of its words (a partition's path: the executives
// started for it), whoever started it.
std::vector<pid_t> processes_with_argument(const std::string& argument);

// The roots that are in `table` and all their descendants in it.
std::set<pid_t> process_trees(const std::map<pid_t, ProcessEntry>& table, const std::vector<pid_t>& roots);

}  // namespace daqx::test
