// In the checked (sanitizer) build, each buffer misuse stops the process where it happens, with the reason.
#include <catch2/catch.hpp>

#include <csignal>

#include "../../tests/support/process.hpp"
#include "daqx/mempool/misuse.hpp"

using daqx::test::ProcessResult;
using daqx::test::run_process;

namespace {

ProcessResult misuse(const std::string& which) {
  return run_process({daqx::test::program_directory() + "/mempool_misuse", which}, std::chrono::seconds(30));
}

}  // namespace

TEST_CASE("a double release is reported, checked builds abort on it", "[misuse][process]") {
  ProcessResult result = misuse("double-release");
  INFO(result.output);
  CHECK_THAT(result.output, Catch::Contains("double release") && Catch::Contains("released twice"));
  if (daqx::mem::kChecks) {
    CHECK(result.signal == SIGABRT);
  } else {
    CHECK(result.exit_code == 0);  // counted and logged; the free list stays whole
  }
}

TEST_CASE("a leak is reported when the pool goes away, checked builds abort on it", "[misuse][process]") {
  ProcessResult result = misuse("leak");
  INFO(result.output);
  CHECK_THAT(result.output, Catch::Contains("leak") && Catch::Contains("still in use"));
  if (daqx::mem::kChecks) CHECK(result.signal == SIGABRT);
}

// Only in a build with the checks (the sanitizer build): the release build does not pay for this one.
#if defined(DAQX_CHECKS)
TEST_CASE("access through a moved-from Ref aborts in checked builds", "[misuse][process]") {
  ProcessResult result = misuse("empty-access");
  INFO(result.output);
  CHECK(result.signal == SIGABRT);
  CHECK_THAT(result.output, Catch::Contains("use after release"));
}
#endif

// Only under AddressSanitizer: elsewhere freed blocks are not poisoned.
#if defined(__SANITIZE_ADDRESS__)
TEST_CASE("writing through a raw pointer after release is caught by AddressSanitizer", "[misuse][process]") {
  ProcessResult result = misuse("raw-after-release");
  INFO(result.output);
  CHECK_FALSE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("use-after-poison"));
}
#endif
