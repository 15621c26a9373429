// The pieces every HTML page shares: head and style sheet, number and time formats, and the script that keeps a
// page live (polls, redraws #live in place, keeps folded sections as the reader left them).
#include "html_page.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "control_routes.hpp"

namespace daqx::http {
namespace {

constexpr const char* kStyle = R"(<style>
body { font-family: system-ui, sans-serif; margin: 0 1.5em 1.5em; color: #222; background: #fff; }
header { display: flex; align-items: baseline; gap: 1.5em; flex-wrap: wrap; border-bottom: 1px solid #ddd; }
h1 { font-size: 1.4em; margin: 0.6em 0 0.3em; } h2 { font-size: 1.1em; margin: 1.4em 0 0.3em; }
h3 { font-size: 1em; margin: 1.2em 0 0.3em; }
table { border-collapse: collapse; margin-top: 0.3em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.state-Halted { color: #666; } .state-Configured { color: #a60; } .state-Enabled { color: #080; font-weight: bold; }
.state-Failed { color: #c00; font-weight: bold; } .state-Unknown { color: #999; }
tr.state-Failed td { background: #fdecea; } tr.state-Failed td.reason { color: #c00; font-weight: bold; }
.down, .warn, .bad { color: #c00; } .up, .good { color: #080; }
.muted { color: #777; } .help { color: #555; font-size: 0.9em; }
.summary { display: flex; flex-wrap: wrap; gap: 0.4em 1.6em; margin: 0.8em 0; }
.problems { border-left: 4px solid #c00; background: #fdecea; padding: 0.2em 1em; margin: 0.8em 0; }
.problems h2 { margin-top: 0.4em; color: #c00; }
section.context { border-top: 1px solid #ddd; margin-top: 0.8em; }
.context .status { font-size: 0.85em; padding: 0.05em 0.5em; border-radius: 0.8em; background: #eee; color: #555; }
.status-up .status { background: #e3f4e3; color: #080; }
.status-unreachable .status, .status-refused .status { background: #c00; color: #fff; }
.status-unreachable table, .status-refused table { opacity: 0.55; }
.status-reason { color: #c00; font-weight: bold; }
details { margin: 0.5em 0; } summary { cursor: pointer; color: #333; }
button { margin-right: 0.4em; } #result { margin-left: 0.6em; }
</style>
)";

}  // namespace

std::string page_head(const std::string& title, bool refresh_without_script, const std::string& head_extra) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  // No favicon request: the machines have no icon to give and a 404 would be an error in the browser's console.
  html += "<link rel=\"icon\" href=\"data:,\">\n";
  // Watched while a run goes on: where scripts are off the page still moves, by reloading itself.
  if (refresh_without_script) html += "<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>\n";
  html += "<title>" + html_escape(title) + "</title>\n";
  html += kStyle;
  html += head_extra;
  html += "</head>\n<body>\n";
  return html;
}

std::string display_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf");
  char text[32];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.6g", value);
  }
  return text;
}

std::string rate_text(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  char text[32];
  if (a >= 1e9)
    std::snprintf(text, sizeof text, "%.2f G", v / 1e9);
  else if (a >= 1e6)
    std::snprintf(text, sizeof text, "%.2f M", v / 1e6);
  else if (a >= 1e3)
    std::snprintf(text, sizeof text, "%.1f k", v / 1e3);
  else
    std::snprintf(text, sizeof text, a < 10 ? "%.1f" : "%.0f", v);
  return text;
}

std::string byte_rate_text(double v) {
  if (!std::isfinite(v)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v / 1e9);
  return text;
}

std::string bytes_text(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  char text[32];
  if (a >= 1e9)
    std::snprintf(text, sizeof text, "%.2f GB", v / 1e9);
  else if (a >= 1e6)
    std::snprintf(text, sizeof text, "%.1f MB", v / 1e6);
  else if (a >= 1e3)
    std::snprintf(text, sizeof text, "%.1f kB", v / 1e3);
  else
    std::snprintf(text, sizeof text, "%.0f B", v);
  return text;
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const auto s = static_cast<long long>(seconds);
  const long long h = s / 3600, m = s % 3600 / 60, x = s % 60;
  char text[64];
  if (h != 0)
    std::snprintf(text, sizeof text, "%lld h %02lld min %02lld s", h, m, x);
  else if (m != 0)
    std::snprintf(text, sizeof text, "%lld min %02lld s", m, x);
  else
    std::snprintf(text, sizeof text, "%lld s", x);
  return text;
}

std::string utc_time_text(long long unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S UTC", &parts);
  return text;
}

const char* script_helpers() {
  return R"JS('use strict';
const esc = s => String(s ?? '').replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]);
const known_number = v => typeof v === 'number' && isFinite(v);
function rate(v) {
  if (!known_number(v)) return '-';
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + ' G';
  if (a >= 1e6) return (v / 1e6).toFixed(2) + ' M';
  if (a >= 1e3) return (v / 1e3).toFixed(1) + ' k';
  return v.toFixed(a < 10 ? 1 : 0);
}
const byteRate = v => known_number(v) ? (v / 1e9).toFixed(3) : '-';
function bytes(v) {
  if (!known_number(v)) return '-';
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + ' GB';
  if (a >= 1e6) return (v / 1e6).toFixed(1) + ' MB';
  if (a >= 1e3) return (v / 1e3).toFixed(1) + ' kB';
  return v.toFixed(0) + ' B';
}
const utcTime = ms => new Date(ms).toISOString().substring(11, 19) + ' UTC';
function duration(seconds) {
  if (!known_number(seconds) || seconds < 0) return '-';
  const s = Math.floor(seconds), h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), x = s % 60;
  const two = n => String(n).padStart(2, '0');
  if (h) return h + ' h ' + two(m) + ' min ' + two(x) + ' s';
  if (m) return m + ' min ' + two(x) + ' s';
  return x + ' s';
}
// Polls `url` every data-interval ms of #live and replaces #live's content with render(answer); `asText`: the
// answer is text (a page), else JSON. Folded sections the reader opened stay open. A failed poll is said at the top
// (#connection) and the last picture stays.
function live(url, render, asText) {
  const main = document.getElementById('live');
  const note = document.getElementById('connection');
  const period = Number(main.dataset.interval) || 1000;
  let lastGood = Date.now();
  async function tick() {
    try {
      const response = await fetch(url, {cache: 'no-store', headers: {'Accept': asText ? 'text/html' : 'application/json'}});
      if (!response.ok) throw new Error('HTTP ' + response.status);
      const answer = asText ? await response.text() : await response.json();
      const open = new Set(Array.from(main.querySelectorAll('details[open]'), d => d.dataset.key));
      main.innerHTML = render(answer);
      for (const d of main.querySelectorAll('details')) if (open.has(d.dataset.key)) d.open = true;
      lastGood = Date.now();
      if (note) { note.textContent = ' live'; note.className = 'good'; }
    } catch (error) {
      if (note) {
        note.textContent = ' not updated for ' + duration((Date.now() - lastGood) / 1000) + ': ' + error.message;
        note.className = 'bad';
      }
    }
    setTimeout(tick, period);
  }
  setTimeout(tick, period);
}
)JS";
}

}  // namespace daqx::http
