// What every HTML page of the control server shares: the head with its style sheet, the end, number formats and
// the small script helpers. Plain strings compiled in: the pages need no file, build step or network.
#pragma once

#include <string>

namespace daqx::http {

// The document up to <body>. `refresh_without_script`: the page reloads itself every few seconds where scripts do
// not run (a <noscript> refresh); with scripts its own code redraws it in place. `head_extra` goes in <head> as is.
std::string page_head(const std::string& title, bool refresh_without_script, const std::string& head_extra = {});
inline constexpr const char* kPageEnd = "</body>\n</html>\n";

// Whole numbers as such (counters are); others with a few significant digits.
std::string display_number(double value);

// JavaScript every live page uses: esc() (text into HTML), rate(), byteRate(), bytes(), utcTime(), duration()
// written to match rate_text() and the other formats of partition_snapshot.hpp, so a redrawn page reads as the
// server-rendered one did.
const char* script_helpers();

// Rates and sizes as every page shows them: "12.3 k" per second, GB/s with three decimals, "1.5 MB"; "-" when
// unknown (NaN).
std::string rate_text(double per_second);
std::string byte_rate_text(double bytes_per_second);
std::string bytes_text(double bytes);

// "1 h 02 min 03 s" and the like, for run and up times; "-" when unknown.
std::string duration_text(double seconds);
// "12:03:04 UTC"
std::string utc_time_text(long long unix_ms);

}  // namespace daqx::http
