// The machine's processes from /proc, and the trees below given roots.
#include "process_table.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "process.hpp"

namespace daqx::test {

std::vector<pid_t> processes_with_argument(const std::string& argument) {
  std::vector<pid_t> found;
  for (const auto& [pid, process] : process_table()) {
    const std::string words = read_text("/proc/" + std::to_string(pid) + "/cmdline");  // NUL-separated
    std::size_t start = 0;
    for (std::size_t end; (end = words.find('\0', start)) != std::string::npos; start = end + 1)
      if (words.compare(start, end - start, argument) == 0) {
        found.push_back(pid);
        break;
      }
  }
  return found;
}

std::map<pid_t, ProcessEntry> process_table() {
  std::map<pid_t, ProcessEntry> table;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return table;
  while (dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long value = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || value <= 0) continue;
    const std::string directory = std::string("/proc/") + entry->d_name;
    // "PID (COMM) STATE PPID ... STARTTIME ...": COMM may hold spaces and parentheses, so the fields are read
    // after the last ')'. STARTTIME is field 22, the 20th after COMM.
    const std::string stat_text = read_text(directory + "/stat");
    const std::size_t open = stat_text.find('(');
    const std::size_t close = stat_text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    ProcessEntry process;
    process.command = stat_text.substr(open + 1, close - open - 1);
    std::istringstream fields(stat_text.substr(close + 1));
    std::string field;
    for (int index = 3; index <= 22 && fields >> field; ++index) {
      if (index == 4) process.parent = static_cast<pid_t>(std::atol(field.c_str()));
      if (index == 22) process.start_time = std::strtoull(field.c_str(), nullptr, 10);
    }
    struct stat namespace_stat {};
    if (::stat((directory + "/ns/net").c_str(), &namespace_stat) == 0) process.network_namespace = namespace_stat.st_ino;
    table.emplace(static_cast<pid_t>(value), process);
  }
  closedir(proc);
  return table;
}

std::set<pid_t> process_trees(const std::map<pid_t, ProcessEntry>& table, const std::vector<pid_t>& roots) {
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, process] : table) children.emplace(process.parent, pid);
  std::vector<pid_t> pending;
  for (pid_t root : roots) {
    if (table.count(root) != 0) pending.push_back(root);
  }
  std::set<pid_t> tree;
  while (!pending.empty()) {
    const pid_t pid = pending.back();
    pending.pop_back();
    if (!tree.insert(pid).second) continue;
    auto [first, last] = children.equal_range(pid);
    for (auto child = first; child != last; ++child) pending.push_back(child->second);
  }
  return tree;
}

}  // namespace daqx::test
