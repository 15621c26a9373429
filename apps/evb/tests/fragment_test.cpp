// Synthetic super-fragments as a specification: CRC-32C on both paths, log-normal sizes, the streaming writer
// under any split of its output, and the checker catching each kind of damage.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../../../tests/support/process.hpp"
#include "daqx/api/frame.hpp"
#include "daqx/apps/crc32c.hpp"
#include "format/fragment_format.hpp"
#include "format/superfragment_check.hpp"
#include "format/superfragment_writer.hpp"

using namespace daqx;
using namespace daqx::evb;
using apps::crc32c;
namespace test_hooks = apps::test_hooks;

namespace {

// The hardware path needs SSE4.2: without it a case that compares the paths is skipped, or fails where
// DAQX_TRANSPORT_REQUIRE=1 (CI's machines have it).
void skip_unless_crc32c_hardware() {
  if (!test_hooks::crc32c_hardware_available())
    daqx::test::skip_for_environment("DAQX_TRANSPORT_REQUIRE", 77,
                                     "this CPU has no SSE4.2: no hardware CRC-32C to check");
}

// Runs a scope on one CRC-32C implementation and puts the previous one back.
class CrcImplementation {
 public:
  explicit CrcImplementation(bool hardware) : before_(test_hooks::use_crc32c_hardware(hardware)) {}
  ~CrcImplementation() { test_hooks::use_crc32c_hardware(before_); }
  CrcImplementation(const CrcImplementation&) = delete;
  CrcImplementation& operator=(const CrcImplementation&) = delete;

 private:
  bool before_;
};

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t x = (state += 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> bytes(n);
  for (auto& b : bytes) b = static_cast<std::byte>(splitmix64(seed));
  return bytes;
}

std::uint32_t crc_of(std::string_view text) {
  return crc32c(0, reinterpret_cast<const std::byte*>(text.data()), text.size());
}

std::uint32_t le32(const std::byte* at) { return detail::load_le<std::uint32_t>(at); }
std::uint16_t le16(const std::byte* at) { return detail::load_le<std::uint16_t>(at); }
std::uint64_t le64(const std::byte* at) { return detail::load_le<std::uint64_t>(at); }

std::size_t padded(std::size_t n) { return (n + 7) / 8 * 8; }
std::size_t fragment_bytes(const FragmentShape& shape, std::uint64_t event, std::uint32_t source) {
  return kSourceHeaderBytes + padded(source_payload_size(shape, event, source)) + kSourceTrailerBytes;
}
// Where source k's fragment starts in the super-fragment.
std::size_t source_offset(const FragmentShape& shape, std::uint64_t event, std::uint32_t source) {
  std::size_t offset = 0;
  for (std::uint32_t s = 0; s < source; ++s) offset += fragment_bytes(shape, event, s);
  return offset;
}

// Large payloads: windows cover many words, and the fill's bulk loops run.
FragmentShape large_shape() {
  FragmentShape shape;
  shape.sources = 3;
  shape.mean_size = 20001;
  shape.spread = 5000;
  shape.seed = 5;
  return shape;
}

// Odd sizes, so payloads end anywhere in a word and padding is exercised.
FragmentShape varied_shape(bool pattern = true) {
  FragmentShape shape;
  shape.sources = 5;
  shape.mean_size = 1001;
  shape.spread = 600;
  shape.pattern = pattern;
  shape.seed = 17;
  return shape;
}

std::vector<std::byte> write_whole(const FragmentShape& shape, std::uint64_t event, std::uint32_t contributor,
                                   std::byte fill = std::byte{0}) {
  SuperFragmentWriter writer;
  std::vector<std::byte> out(writer.begin(shape, event, contributor), fill);
  CHECK(writer.write(out.data(), out.size()) == out.size());
  CHECK(writer.remaining() == 0);
  return out;
}

// Writes through windows of random sizes (1..max_window) and returns the concatenation.
std::vector<std::byte> write_split(const FragmentShape& shape, std::uint64_t event, std::uint32_t contributor,
                                   std::uint64_t seed, std::size_t max_window) {
  SuperFragmentWriter writer;
  const std::size_t total = writer.begin(shape, event, contributor);
  std::vector<std::byte> out(total);
  std::size_t at = 0;
  while (writer.remaining() != 0) {
    const std::size_t window = std::min<std::size_t>(1 + splitmix64(seed) % max_window, total - at);
    const std::size_t n = writer.write(out.data() + at, window);
    REQUIRE(n == window);
    at += n;
  }
  CHECK(at == total);
  return out;
}

// Cuts bytes into pieces of random sizes (0..max_piece: empty pieces too).
std::vector<std::span<const std::byte>> cut(const std::vector<std::byte>& bytes, std::uint64_t seed,
                                            std::size_t max_piece) {
  std::vector<std::span<const std::byte>> pieces;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t n = std::min<std::size_t>(splitmix64(seed) % (max_piece + 1), bytes.size() - at);
    pieces.emplace_back(bytes.data() + at, n);
    at += n;
  }
  return pieces;
}

FragmentCheck verify_whole(const std::vector<std::byte>& bytes, std::uint64_t event, std::uint32_t contributor,
                           bool check_crc = true) {
  const std::span<const std::byte> piece(bytes);
  return verify_superfragment(std::span<const std::span<const std::byte>>(&piece, 1), event, contributor, check_crc);
}

bool mentions(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

// ---- CRC-32C -------------------------------------------------------------------------------------------

TEST_CASE("crc32c of \"123456789\" is 0xE3069283 in software and, where the CPU has SSE4.2, in hardware",
          "[fragment][crc]") {
  {
    CrcImplementation software(false);
    CHECK(crc_of("123456789") == 0xE3069283u);
  }
  skip_unless_crc32c_hardware();
  CrcImplementation hardware(true);
  CHECK(crc_of("123456789") == 0xE3069283u);
}

TEST_CASE("crc32c matches the iSCSI test vectors of RFC 3720 on both paths", "[fragment][crc]") {
  std::vector<std::byte> zeros(32, std::byte{0});
  std::vector<std::byte> ones(32, std::byte{0xFF});
  std::vector<std::byte> up(32);
  std::vector<std::byte> down(32);
  for (std::size_t i = 0; i < 32; ++i) {
    up[i] = static_cast<std::byte>(i);
    down[i] = static_cast<std::byte>(31 - i);
  }
  for (bool hardware : {false, true}) {
    if (hardware) skip_unless_crc32c_hardware();
    CrcImplementation implementation(hardware);
    INFO((hardware ? "hardware" : "software"));
    CHECK(crc32c(0, zeros.data(), zeros.size()) == 0x8A9136AAu);
    CHECK(crc32c(0, ones.data(), ones.size()) == 0x62A8AB43u);
    CHECK(crc32c(0, up.data(), up.size()) == 0x46DD794Eu);
    CHECK(crc32c(0, down.data(), down.size()) == 0x113FDB5Cu);
  }
}

TEST_CASE("crc32c of no bytes is the crc it continues from", "[fragment][crc]") {
  CHECK(crc32c(0, nullptr, 0) == 0);
  CHECK(crc32c(0x12345678u, nullptr, 0) == 0x12345678u);
}

TEST_CASE("the software and hardware crc32c agree on every length and alignment, whole or continued in parts",
          "[fragment][crc]") {
  skip_unless_crc32c_hardware();
  // Short inputs of every length, and long ones around the hardware path's 1.5 KiB rounds of three streams.
  std::vector<std::size_t> lengths;
  for (std::size_t length = 0; length <= 300; ++length) lengths.push_back(length);
  for (std::size_t length : {1535, 1536, 1537, 1543, 1544, 3071, 3072, 3073, 4615, 10000, 65536})
    lengths.push_back(length);
  const auto bytes = random_bytes(65536 + 8, 99);
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t length : lengths) {
      const std::byte* data = bytes.data() + start;
      std::uint32_t software = 0;
      std::uint32_t hardware = 0;
      std::uint32_t hardware_in_parts = 0;
      {
        CrcImplementation implementation(false);
        software = crc32c(0, data, length);
      }
      {
        CrcImplementation implementation(true);
        hardware = crc32c(0, data, length);
        const std::size_t half = length / 3;
        hardware_in_parts = crc32c(crc32c(0, data, half), data + half, length - half);
      }
      INFO("start " << start << " length " << length);
      REQUIRE(software == hardware);
      REQUIRE(hardware_in_parts == hardware);
    }
  }
}

// ---- sizes ---------------------------------------------------------------------------------------------

TEST_CASE("with spread 0 every source payload is exactly mean_size", "[fragment][size]") {
  FragmentShape shape;
  shape.mean_size = 2049;
  shape.spread = 0;
  for (std::uint64_t event = 0; event < 100; ++event)
    for (std::uint32_t source = 0; source < shape.sources; ++source)
      REQUIRE(source_payload_size(shape, event, source) == 2049);
  CHECK(superfragment_size(shape, 5) == shape.sources * (24 + 2056 + 8));
}

TEST_CASE("payload sizes are a pure function of seed, event and source", "[fragment][size]") {
  FragmentShape shape = varied_shape();
  FragmentShape other_seed = shape;
  other_seed.seed = shape.seed + 1;
  int differing = 0;
  for (std::uint64_t event = 0; event < 200; ++event) {
    for (std::uint32_t source = 0; source < shape.sources; ++source) {
      REQUIRE(source_payload_size(shape, event, source) == source_payload_size(shape, event, source));
      differing += source_payload_size(shape, event, source) != source_payload_size(other_seed, event, source);
    }
  }
  CHECK(differing > 900);  // of 1000: another seed, other sizes
}

TEST_CASE("payload sizes over many events have the requested mean and spread and a log-normal median",
          "[fragment][size]") {
  struct Case {
    std::uint32_t mean;
    std::uint32_t spread;
    double tolerance;  // relative, on the standard deviation (the heavier the tail, the slower it settles)
  };
  for (const Case c : {Case{2048, 1024, 0.03}, Case{100000, 20000, 0.03}, Case{1000, 2000, 0.10}}) {
    FragmentShape shape;
    shape.sources = 1;
    shape.mean_size = c.mean;
    shape.spread = c.spread;
    shape.seed = 2024;
    std::vector<double> sizes;
    const int n = 200000;
    sizes.reserve(n);
    for (std::uint64_t event = 0; event < static_cast<std::uint64_t>(n); ++event)
      sizes.push_back(source_payload_size(shape, event, 0));
    double sum = 0;
    for (double s : sizes) sum += s;
    const double mean = sum / n;
    double squares = 0;
    for (double s : sizes) squares += (s - mean) * (s - mean);
    const double deviation = std::sqrt(squares / (n - 1));
    std::nth_element(sizes.begin(), sizes.begin() + n / 2, sizes.end());
    const double median = sizes[n / 2];
    const double ratio = static_cast<double>(c.spread) / c.mean;
    const double log_normal_median = c.mean / std::sqrt(1 + ratio * ratio);
    INFO("mean " << mean << " deviation " << deviation << " median " << median << " for " << c.mean << " +- "
                 << c.spread);
    CHECK(std::abs(mean - c.mean) < 0.02 * c.mean);
    CHECK(std::abs(deviation - c.spread) < c.tolerance * c.spread);
    CHECK(std::abs(median - log_normal_median) < 0.02 * log_normal_median);
  }
}

TEST_CASE("payload sizes are clamped to max_size", "[fragment][size]") {
  FragmentShape shape;
  shape.mean_size = 2048;
  shape.spread = 2048;
  shape.max_size = 3000;
  int at_max = 0;
  for (std::uint64_t event = 0; event < 2000; ++event) {
    for (std::uint32_t source = 0; source < shape.sources; ++source) {
      const std::uint32_t size = source_payload_size(shape, event, source);
      REQUIRE(size <= 3000);
      at_max += size == 3000;
    }
  }
  CHECK(at_max > 100);
  shape.spread = 0;
  shape.mean_size = 5000;
  CHECK(source_payload_size(shape, 1, 1) == 3000);
}

TEST_CASE("a super-fragment's size is the sum of its sources' headers, padded payloads and trailers",
          "[fragment][size]") {
  const FragmentShape shape = varied_shape();
  for (std::uint64_t event = 0; event < 50; ++event) {
    std::size_t sum = 0;
    for (std::uint32_t source = 0; source < shape.sources; ++source) sum += fragment_bytes(shape, event, source);
    REQUIRE(superfragment_size(shape, event) == sum);
  }
}

// ---- the writer ----------------------------------------------------------------------------------------

TEST_CASE("begin returns the total, remaining counts down to zero and a finished writer writes nothing",
          "[fragment][writer]") {
  const FragmentShape shape = varied_shape();
  SuperFragmentWriter writer;
  const std::size_t total = writer.begin(shape, 3, 4);
  CHECK(total == superfragment_size(shape, 3));
  CHECK(writer.total() == total);
  CHECK(writer.remaining() == total);
  std::vector<std::byte> out(total + 100);
  CHECK(writer.write(out.data(), 100) == 100);
  CHECK(writer.remaining() == total - 100);
  CHECK(writer.write(out.data() + 100, out.size() - 100) == total - 100);
  CHECK(writer.remaining() == 0);
  CHECK(writer.write(out.data(), out.size()) == 0);
  CHECK(writer.write(out.data(), 0) == 0);
}

TEST_CASE("each source fragment has its header, zero padding and CRC trailer at the documented offsets",
          "[fragment][writer]") {
  const FragmentShape shape = varied_shape();
  const std::uint64_t event = 0x0000000100000002ull;
  const auto bytes = write_whole(shape, event, 42, std::byte{0xEE});
  for (std::uint32_t source = 0; source < shape.sources; ++source) {
    INFO("source " << source);
    const std::byte* at = bytes.data() + source_offset(shape, event, source);
    const std::uint32_t payload = source_payload_size(shape, event, source);
    CHECK(le32(at + 0) == 0xFED0DA9Cu);
    CHECK(le16(at + 4) == source);
    CHECK(le16(at + 6) == 1);
    CHECK(le32(at + 8) == payload);
    CHECK(le64(at + 12) == event);
    CHECK(le32(at + 20) == 42);
    const std::byte* data = at + kSourceHeaderBytes;
    for (std::size_t i = payload; i < padded(payload); ++i) CHECK(data[i] == std::byte{0});
    const std::byte* trailer = data + padded(payload);
    CHECK(le32(trailer + 0) == crc32c(0, data, payload));
    CHECK(le32(trailer + 4) == fragment_bytes(shape, event, source) / 8);
  }
}

TEST_CASE("the writer writes the same bytes however its output is split into windows", "[fragment][writer]") {
  const FragmentShape shape = varied_shape();
  const auto whole = write_whole(shape, 77, 5);
  CHECK(write_split(shape, 77, 5, 1, 1) == whole);  // one byte at a time
  for (std::uint64_t seed = 2; seed < 12; ++seed) {
    INFO("split seed " << seed);
    CHECK(write_split(shape, 77, 5, seed, 13) == whole);
    CHECK(write_split(shape, 77, 5, seed, 700) == whole);
    CHECK(write_split(shape, 77, 5, seed, 5000) == whole);
  }
  const FragmentShape large = large_shape();
  const auto large_whole = write_whole(large, 78, 5);
  CHECK(verify_whole(large_whole, 78, 5).ok);
  for (std::uint64_t seed = 2; seed < 6; ++seed) {
    INFO("large, split seed " << seed);
    CHECK(write_split(large, 78, 5, seed, 4000) == large_whole);
    CHECK(write_split(large, 78, 5, seed, 70000) == large_whole);
  }
}

TEST_CASE("the software and hardware writers write the same bytes", "[fragment][writer]") {
  skip_unless_crc32c_hardware();
  for (const FragmentShape& shape : {varied_shape(), large_shape()}) {
    for (std::size_t max_window : {std::size_t{50}, std::size_t{70000}}) {
      std::vector<std::byte> hardware;
      std::vector<std::byte> software;
      {
        CrcImplementation implementation(true);
        hardware = write_split(shape, 8, 9, 3, max_window);
      }
      {
        CrcImplementation implementation(false);
        software = write_split(shape, 8, 9, 3, max_window);
        CHECK(verify_whole(software, 8, 9).ok);
      }
      INFO("mean size " << shape.mean_size << ", windows up to " << max_window);
      CHECK(software == hardware);
    }
  }
}

TEST_CASE("payload patterns differ from event to event and from source to source", "[fragment][writer]") {
  FragmentShape shape;
  shape.sources = 2;
  shape.mean_size = 256;
  const auto first = write_whole(shape, 1, 1);
  const auto second = write_whole(shape, 2, 1);
  const std::size_t payload = kSourceHeaderBytes;
  const std::size_t next_source_payload = source_offset(shape, 1, 1) + kSourceHeaderBytes;
  CHECK(std::memcmp(first.data() + payload, second.data() + payload, 256) != 0);
  CHECK(std::memcmp(first.data() + payload, first.data() + next_source_payload, 256) != 0);
}

TEST_CASE("without the pattern the payload is left untouched and the fragment says it has no CRC",
          "[fragment][writer]") {
  const FragmentShape shape = varied_shape(false);
  const auto bytes = write_whole(shape, 6, 7, std::byte{0xAB});
  for (std::uint32_t source = 0; source < shape.sources; ++source) {
    INFO("source " << source);
    const std::byte* at = bytes.data() + source_offset(shape, 6, source);
    const std::uint32_t payload = source_payload_size(shape, 6, source);
    CHECK(le32(at) == 0xFED0DA9Cu);
    CHECK(le16(at + 6) == 0);
    const std::byte* data = at + kSourceHeaderBytes;
    CHECK(std::all_of(data, data + padded(payload), [](std::byte b) { return b == std::byte{0xAB}; }));
    CHECK(le32(data + padded(payload)) == 0);
  }
  const auto check = verify_whole(bytes, 6, 7);
  CHECK(check.ok);
  CHECK(check.sources == shape.sources);
}

TEST_CASE("a shape without sources makes an empty super-fragment that verifies", "[fragment][writer]") {
  FragmentShape shape;
  shape.sources = 0;
  SuperFragmentWriter writer;
  CHECK(writer.begin(shape, 1, 1) == 0);
  CHECK(superfragment_size(shape, 1) == 0);
  std::byte out[8];
  CHECK(writer.write(out, sizeof out) == 0);
  const auto check = verify_superfragment({}, 1, 1, true);
  CHECK(check.ok);
  CHECK(check.sources == 0);
}

TEST_CASE("a super-fragment of a hundred sources is written and verifies like a small one", "[fragment][writer]") {
  FragmentShape shape;
  shape.sources = 100;
  shape.mean_size = 101;
  shape.spread = 50;
  const auto whole = write_whole(shape, 3, 4);
  CHECK(whole.size() == superfragment_size(shape, 3));
  CHECK(write_split(shape, 3, 4, 9, 300) == whole);
  const std::byte* last = whole.data() + source_offset(shape, 3, 99);
  CHECK(le16(last + 4) == 99);
  CHECK(le32(last + 8) == source_payload_size(shape, 3, 99));
  const auto check = verify_whole(whole, 3, 4);
  CHECK(check.ok);
  CHECK(check.sources == 100);
}

TEST_CASE("the writer keeps its own copy of the shape", "[fragment][writer]") {
  FragmentShape shape = varied_shape();
  const auto whole = write_whole(shape, 10, 11);
  SuperFragmentWriter writer;
  std::vector<std::byte> out(writer.begin(shape, 10, 11));
  const std::size_t first = writer.write(out.data(), 1000);
  shape.mean_size = 5;  // the caller reconfigures while an event is half written
  shape.sources = 1;
  writer.write(out.data() + first, out.size() - first);
  CHECK(out == whole);
}

// ---- the checker ---------------------------------------------------------------------------------------

TEST_CASE("verify accepts a super-fragment however it is cut into pieces", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  const auto bytes = write_whole(shape, 12, 34);
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    for (std::size_t max_piece : {std::size_t{1}, std::size_t{7}, std::size_t{30}, std::size_t{1000}}) {
      const auto pieces = cut(bytes, seed, max_piece);
      const auto check = verify_superfragment(pieces, 12, 34, true);
      INFO("seed " << seed << " max piece " << max_piece << ": " << check.problem);
      REQUIRE(check.ok);
      CHECK(check.sources == shape.sources);
    }
  }
}

TEST_CASE("verify names the source whose payload has a flipped bit, unless told not to check CRCs",
          "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  auto bytes = write_whole(shape, 12, 34);
  REQUIRE(source_payload_size(shape, 12, 2) > 10);
  bytes[source_offset(shape, 12, 2) + kSourceHeaderBytes + 9] ^= std::byte{0x10};
  const auto check = verify_superfragment(cut(bytes, 5, 100), 12, 34, true);
  CHECK_FALSE(check.ok);
  CHECK(mentions(check.problem, "source 2:"));
  CHECK(mentions(check.problem, "CRC"));
  CHECK(verify_whole(bytes, 12, 34, false).ok);
}

TEST_CASE("verify reports an event other than the expected one", "[fragment][verify]") {
  const auto bytes = write_whole(varied_shape(), 17, 34);
  const auto check = verify_whole(bytes, 18, 34);
  CHECK_FALSE(check.ok);
  CHECK(check.problem == "source 0: event 17 where 18 was expected");
}

TEST_CASE("verify reports a contributor other than the expected one", "[fragment][verify]") {
  const auto bytes = write_whole(varied_shape(), 17, 34);
  const auto check = verify_whole(bytes, 17, 35);
  CHECK_FALSE(check.ok);
  CHECK(check.problem == "source 0: contributor 34 where 35 was expected");
}

TEST_CASE("verify reports a later source's wrong event by that source", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  auto bytes = write_whole(shape, 17, 34);
  detail::store_le<std::uint64_t>(bytes.data() + source_offset(shape, 17, 3) + 12, 99);
  const auto check = verify_whole(bytes, 17, 34);
  CHECK_FALSE(check.ok);
  CHECK(check.problem == "source 3: event 99 where 17 was expected");
}

TEST_CASE("verify reports a truncated super-fragment", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  const auto bytes = write_whole(shape, 1, 2);
  const std::size_t last = source_offset(shape, 1, shape.sources - 1);
  for (std::size_t size : {bytes.size() - 1, bytes.size() - 8, last + 30, last + 23, last + 1}) {
    std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
    const auto check = verify_superfragment(cut(truncated, size, 64), 1, 2, true);
    INFO("size " << size << " of " << bytes.size() << ": " << check.problem);
    CHECK_FALSE(check.ok);
    CHECK(mentions(check.problem, "source 4:"));
  }
}

TEST_CASE("verify reports bytes after the last source fragment", "[fragment][verify]") {
  const auto bytes = write_whole(varied_shape(), 1, 2);
  for (std::size_t extra : {1, 8, 23, 24, 100}) {
    auto longer = bytes;
    longer.resize(bytes.size() + extra, std::byte{0});
    const auto check = verify_whole(longer, 1, 2);
    INFO("extra " << extra << ": " << check.problem);
    CHECK_FALSE(check.ok);
    CHECK(mentions(check.problem, "source 5:"));
  }
}

TEST_CASE("verify reports a header with the wrong magic", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  auto bytes = write_whole(shape, 1, 2);
  bytes[source_offset(shape, 1, 1)] ^= std::byte{1};
  const auto check = verify_whole(bytes, 1, 2, false);
  CHECK_FALSE(check.ok);
  CHECK(mentions(check.problem, "source 1: magic"));
}

TEST_CASE("verify reports sources out of order", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  auto bytes = write_whole(shape, 1, 2);
  detail::store_le<std::uint16_t>(bytes.data() + source_offset(shape, 1, 2) + 4, 3);
  const auto check = verify_whole(bytes, 1, 2);
  CHECK_FALSE(check.ok);
  CHECK(check.problem == "source 2: source index 3 where 2 was expected");
}

TEST_CASE("verify reports a payload size that disagrees with the trailer", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  auto bytes = write_whole(shape, 1, 2);
  const std::size_t at = source_offset(shape, 1, 0) + 8;
  detail::store_le<std::uint32_t>(bytes.data() + at, le32(bytes.data() + at) + 8);
  const auto check = verify_whole(bytes, 1, 2, false);
  CHECK_FALSE(check.ok);
  CHECK(mentions(check.problem, "source 0:"));
}

TEST_CASE("verify reports a CRC trailer that does not match the payload", "[fragment][verify]") {
  const FragmentShape shape = varied_shape();
  auto bytes = write_whole(shape, 1, 2);
  const std::size_t trailer = source_offset(shape, 1, 2) + fragment_bytes(shape, 1, 2) - kSourceTrailerBytes;
  bytes[trailer] ^= std::byte{0x80};
  const auto check = verify_whole(bytes, 1, 2);
  CHECK_FALSE(check.ok);
  CHECK(mentions(check.problem, "source 2:"));
}

TEST_CASE("verify reports non-zero padding after a payload", "[fragment][verify]") {
  FragmentShape shape = varied_shape();
  shape.spread = 0;
  shape.mean_size = 1001;  // 7 bytes of padding after each payload
  auto bytes = write_whole(shape, 1, 2);
  bytes[source_offset(shape, 1, 1) + kSourceHeaderBytes + 1003] = std::byte{1};
  const auto check = verify_whole(bytes, 1, 2);
  CHECK_FALSE(check.ok);
  CHECK(mentions(check.problem, "source 1: padding"));
}
