// The RU's synthetic data source as a specification: it announces each super-fragment's size before it is read,
// its cursors write exactly that many bytes, which pass the BU's checks for the contributor the source was made
// for, and the cursors (one per BU in the sender) do not disturb each other when read in turns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "readout/synthetic_source.hpp"
#include "format/superfragment_check.hpp"

using namespace daqx::evb;
using namespace daqx::evb::readout;

namespace {

FragmentShape shape() {
  FragmentShape s;
  s.sources = 4;
  s.mean_size = 900;
  s.spread = 500;
  s.pattern = true;
  s.seed = 9;
  return s;
}

// Reads event's super-fragment through cursor in windows of `window` bytes.
std::vector<std::byte> read(SuperFragmentCursor& cursor, std::uint64_t event, std::size_t window) {
  std::vector<std::byte> out(cursor.begin(event));
  std::size_t at = 0;
  while (cursor.remaining() != 0) at += cursor.write(out.data() + at, std::min(window, out.size() - at));
  REQUIRE(at == out.size());
  return out;
}

bool passes(const std::vector<std::byte>& bytes, std::uint64_t event, std::uint32_t contributor) {
  const std::span<const std::byte> whole(bytes);
  return verify_superfragment(std::span(&whole, 1), event, contributor, true).ok;
}

}  // namespace

TEST_CASE("the synthetic source's cursors write the size it announced, and it passes the BU's checks") {
  const SyntheticSource source(shape(), 31);
  const auto cursor = source.cursor();
  for (std::uint64_t event = 1; event < 40; ++event) {
    INFO("event " << event);
    const std::size_t announced = source.size_of(event);
    const auto bytes = read(*cursor, event, 777);
    CHECK(bytes.size() == announced);
    CHECK(cursor->total() == announced);
    CHECK(passes(bytes, event, 31));
    CHECK_FALSE(passes(bytes, event, 32));  // another contributor's would be misrouted
  }
}

TEST_CASE("cursors of one source read in turns write what each would alone") {
  const SyntheticSource source(shape(), 5);
  const auto alone = source.cursor();
  const auto expected_a = read(*alone, 10, 1 << 20);
  const auto expected_b = read(*alone, 11, 1 << 20);
  const auto a = source.cursor();
  const auto b = source.cursor();
  std::vector<std::byte> got_a(a->begin(10)), got_b(b->begin(11));
  std::size_t at_a = 0, at_b = 0;
  while (a->remaining() != 0 || b->remaining() != 0) {  // 100 bytes of one, then of the other
    at_a += a->write(got_a.data() + at_a, std::min<std::size_t>(100, got_a.size() - at_a));
    at_b += b->write(got_b.data() + at_b, std::min<std::size_t>(100, got_b.size() - at_b));
  }
  CHECK(got_a == expected_a);
  CHECK(got_b == expected_b);
}
