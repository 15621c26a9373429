// The adaptive poll window (pollTime=auto): it shrinks to nothing for a thread whose work comes in bursts far
// apart, and grows back to the whole window once work comes again within it.
#include <catch2/catch.hpp>

#include "daqx/pt/poll_window.hpp"

using namespace std::chrono_literals;
using daqx::pt::PollWindow;

TEST_CASE("sleeps longer than the window halve it down to none, short ones double it back", "[pt][poll]") {
  PollWindow window(50us);
  CHECK(window.current() == 50us);  // a new thread polls the whole window
  // Work far apart (a monitor's batches of records 40 ms apart): polling after each one is in vain.
  window.after_sleep(40ms, true);
  CHECK(window.current() == 25us);
  window.after_sleep(40ms, true);
  window.after_sleep(40ms, true);
  CHECK(window.current() == 6250ns);
  window.after_sleep(40ms, true);
  CHECK(window.current() == 0us);  // below the start: no polling at all
  window.after_sleep(100ms, false);
  CHECK(window.current() == 0us);
  // Work that comes soon after the last (a round trip, a stream): the sleep would have been a poll.
  window.after_sleep(20us, true);
  CHECK(window.current() == daqx::pt::kPollWindowStart);
  for (int i = 0; i < 10; ++i) window.after_sleep(20us, true);
  CHECK(window.current() == 50us);  // never longer than pollTime's automatic value
}

TEST_CASE("a sleep that ends without work shrinks the window however short it was", "[pt][poll]") {
  PollWindow window(50us);
  window.after_sleep(10us, false);  // a deadline (housekeeping), not work
  CHECK(window.current() == 25us);
  window.after_sleep(120us, true);  // work soon after (the sleep includes the wake-up's latency): poll for it
  CHECK(window.current() == 50us);
  window.after_sleep(200us, true);  // four windows: not soon
  CHECK(window.current() == 25us);
}
