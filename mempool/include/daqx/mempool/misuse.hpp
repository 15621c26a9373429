// Detection of buffer misuse (double release, use after release, leaks) and what happens when it is found.
#pragma once

#include <functional>
#include <string_view>

namespace daqx::mem {

#if defined(DAQX_CHECKS)
inline constexpr bool kChecks = true;
#else
inline constexpr bool kChecks = false;
#endif

enum class Misuse {
  double_release,     // a block went back to its pool twice (e.g. a transport completed a loan twice)
  use_after_release,  // an empty or released Ref was dereferenced
  leak,               // a pool was destroyed while blocks were still out
  bad_window,         // a data window outside its block
  shared_mutation,    // the window or chain of a shared block was changed
};

std::string_view to_string(Misuse kind) noexcept;

using MisuseHandler = std::function<void(Misuse, std::string_view detail)>;

// The default handler logs the misuse and, in DAQX_CHECKS builds, aborts so the fault is found where
// it happens. Tests install their own handler to observe it. Returns the previous handler.
MisuseHandler set_misuse_handler(MisuseHandler handler);
void report_misuse(Misuse kind, std::string_view detail);

}  // namespace daqx::mem
