// Who serves a context's control address: nobody yet, the executive this launcher started there (it answers
// GET /api/executive with the launcher's instance and the context's URL), or another process. The launcher asks
// before it starts anything (a partition whose address is in use is refused, nothing started) and before it
// drives a context (one answering as another process is never adopted).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "daqx/control/control_request_pool.hpp"

namespace daqx::launch {

struct AddressOwner {
  enum class Kind { nobody, ours, another };
  Kind kind = Kind::nobody;
  std::string who;  // another: what answers there, for messages ("daqx-executive pid 42 of partition 'evb' (...)")
};

// What a GET /api/executive to `url` got: ours when it is the answer of an executive started with `instance` for
// that URL; another when a different executive (another instance, another context, none) answered; nobody for no
// answer, or an answer that says no more than that some program is there (a status other than 200): the start
// goes on and that program's hold on the port shows as the start failing.
AddressOwner owner_of(const HttpReply& reply, const std::string& url, const std::string& instance);

// A context whose control address is in use before this launcher has started anything.
struct AddressInUse {
  std::string url;
  std::string by;  // what serves it, as far as can be told
};

// Every context of `urls` whose control address a process already listens on: one GET /api/executive to each, all
// at once over `pool` (its threads, its fan-out), each bounded by `deadline`. A context whose port refuses the
// connection, or whose host cannot be reached within the deadline, is free as far as can be told; one that takes
// the connection, whatever it then says or does not say, is in use.
std::vector<AddressInUse> addresses_in_use(const std::vector<std::string>& urls, ControlRequestPool& pool,
                                           std::chrono::milliseconds deadline);

}  // namespace daqx::launch
