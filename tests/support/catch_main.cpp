// The one Catch2 main shared by every test program.
#define CATCH_CONFIG_RUNNER
// Catch2 v2's console reporter indents a failing test's name after its first ": "; past the console width that
// indent makes it throw std::out_of_range from within the report (std::terminate: the test aborts, its processes
// left running, its failure unprinted). Our names are sentences: the width covers them, and main refuses a name
// it would not.
#define CATCH_CONFIG_CONSOLE_WIDTH 240
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>

#include "process.hpp"

namespace {

// Tells skip_for_environment that a check has failed: a test that finds late that it cannot run here (a tool
// missing for its last part) then fails instead of being reported skipped.
struct FailedCheckListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) daqx::test::note_failed_check();
    return true;
  }
};
CATCH_REGISTER_LISTENER(FailedCheckListener)

}  // namespace

int main(int argc, char* argv[]) {
  // A ';' in a test case's name splits it, in catch_discover_tests, into ctest entries that match no test: Catch
  // would run nothing and they would pass. Here the name is whole however the source spells it: a program with
  // such a name runs no test at all, so every ctest entry of it fails with this message instead of one passing
  // silently. Listing still works: catch_discover_tests must see the names to make the entries that then fail.
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--list", 6) == 0) return Catch::Session().run(argc, argv);
  int bad_names = 0;
  for (const Catch::TestCase& test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
    const std::size_t colon = test.name.find(": ");
    if (colon != std::string::npos && colon + 2 >= CATCH_CONFIG_CONSOLE_WIDTH - 1) {
      std::fprintf(stderr, "%s:%zu: test case name's first \": \" ends past column %d (Catch could not report its "
                   "failure): %s\n", test.lineInfo.file, test.lineInfo.line, CATCH_CONFIG_CONSOLE_WIDTH - 1,
                   test.name.c_str());
      ++bad_names;
    }
    if (test.name.find(';') == std::string::npos) continue;
    std::fprintf(stderr, "%s:%zu: test case name holds ';' (use ',' or ':'): %s\n", test.lineInfo.file,
                 test.lineInfo.line, test.name.c_str());
    ++bad_names;
  }
  if (bad_names != 0) return 2;
  return Catch::Session().run(argc, argv);
}
