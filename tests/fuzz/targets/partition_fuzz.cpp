// Fuzz target: the partition loader (executive/runtime/src/partition_parse.cpp, partition_check.cpp) on anything a text
// editor can produce, then the second round of checks against the classes and transports of daqx's own modules
// (loaded once, from the build tree). Properties: a partition is either accepted or refused with ConfigError, never
// another exception or a crash; every refusal reads "fuzz.xml:LINE: reason" on one line of UTF-8; nothing named in the text is ever
// loaded or fetched (modules are not loaded from it, and pugixml expands no external entity).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "daqx/executive/partition.hpp"
#include "daqx/services/text.hpp"
#include "module_loader.hpp"

namespace {

std::unique_ptr<daqx::detail::ModuleRegistry> catalogue;

// One line of UTF-8 without control characters, whatever bytes the partition held: "fuzz.xml:LINE: reason".
// Checked by hand: std::regex recurses per character in libstdc++ and overflows the stack on a long message.
void check_refusal(const std::string& message) {
  const std::string_view prefix = "fuzz.xml:";
  std::size_t at = prefix.size();
  while (at < message.size() && message[at] >= '0' && message[at] <= '9') ++at;
  bool ok = message.starts_with(prefix) && at > prefix.size() && message.compare(at, 2, ": ") == 0 &&
            message.size() > at + 2 && daqx::strings::valid_utf8(message) == message;
  for (char c : message) ok = ok && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  if (!ok) {
    std::fprintf(stderr, "a refusal without file, line and reason: '%s'\n", message.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  catalogue = std::make_unique<daqx::detail::ModuleRegistry>();
  for (const char* module : {"libdaqx_pttcp.so", "libdaqx_ptshm.so", "libdaqx_nton.so", "libdaqx_evb.so"}) {
    const std::string problem = catalogue->load(module, ".");
    if (!problem.empty()) {
      std::fprintf(stderr, "partition_fuzz: cannot load %s: %s\n", module, problem.c_str());
      std::abort();
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  daqx::config::Partition partition;
  try {
    partition = daqx::config::parse_partition(xml, "fuzz.xml");
  } catch (const daqx::config::ConfigError& error) {
    if (error.messages().empty()) std::abort();
    for (const std::string& message : error.messages()) check_refusal(message);
    return 0;
  }
  for (const daqx::config::ContextConfig& context : partition.contexts) {
    for (const std::string& message : daqx::config::check_against_catalogue(partition, context, *catalogue))
      check_refusal(message);
  }
  std::string error;
  for (const char* selector : {"*", "class:nton::Sender", "1,2,3"}) daqx::config::resolve_selector(partition, selector, error);
  return 0;
}
