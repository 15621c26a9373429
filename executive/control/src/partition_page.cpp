// GET /partition: the whole partition on one page. The server renders it complete (readable without JavaScript);
// its script polls /api/partition every interval and redraws the same markup in place, with the same formats.
#include <algorithm>
#include <cstdio>

#include "control_routes.hpp"
#include "html_page.hpp"
#include "partition_snapshot.hpp"

namespace daqx::http {
namespace {

std::string e(const std::string& text) { return html_escape(text); }

std::string state_class(const std::string& state) {
  // The class names the style sheet knows; anything else (a future state) gets the plain look.
  for (const char* known : {"Halted", "Configured", "Enabled", "Failed", "Unknown"})
    if (state == known) return std::string("state-") + known;
  return "state-other";
}

std::string summary(const PartitionSnapshot& s) {
  std::string html = "<p class=\"summary\">";
  html += std::string("<span>run <b id=\"run\">") + (s.run == 0 ? std::string("none") : std::to_string(s.run)) + "</b></span>";
  html += std::string("<span>run time <b id=\"run-time\">") + duration_text(s.run == 0 ? kNoRate : s.run_seconds) + "</b></span>";
  const std::size_t answering = s.contexts.size() - s.contexts_unreachable;
  html += std::string("<span>contexts <b id=\"contexts\"") + std::string(s.contexts_unreachable ? " class=\"bad\"" : "") + ">" +
          std::to_string(answering) + " of " + std::to_string(s.contexts.size()) + " answering</b></span>";
  html += std::string("<span>applications <b>") + std::to_string(s.applications) + "</b>";
  if (s.failed != 0) html += std::string(", <b id=\"failed\" class=\"bad\">") + std::to_string(s.failed) + " Failed</b>";
  html += std::string("</span><span>connections <b class=\"good\">") + std::to_string(s.connections_up) + " up</b>";
  if (s.connections_down != 0) html += std::string(", <b class=\"bad\">") + std::to_string(s.connections_down) + " down</b>";
  if (s.connections_starved != 0)
    html += std::string(", <b class=\"bad\">") + std::to_string(s.connections_starved) + " starved</b>";
  html += std::string("</span><span class=\"muted\">updated <span id=\"updated\">") + utc_time_text(s.time_ms) + "</span>";
  if (!s.polled) html += " (waiting for the first answers)";
  return html + "</span></p>\n";
}

std::string unreachable_text(const ContextSnapshot& context, std::int64_t now_ms) {
  std::string text = to_string(context.status);
  if (context.last_seen_ms != 0) {
    text += std::string(", last seen ") + utc_time_text(context.last_seen_ms) + " (" +
            duration_text(static_cast<double>(now_ms - context.last_seen_ms) / 1000.0) + " ago)";
  } else {
    text += ", never seen";
  }
  return text + ": " + context.reason;
}

bool unreachable(const ContextSnapshot& context) {
  return context.status == ContextSnapshot::Status::unreachable || context.status == ContextSnapshot::Status::refused;
}

bool needs_attention(const ContextSnapshot& context) {
  if (!context.attention.empty()) return true;
  for (const ApplicationSnapshot& app : context.applications)
    if (!app.attention.empty()) return true;
  return false;
}

// Contexts not answering, connections down or starved, failed allocations; Failed applications with their reasons,
// applications not in the usual state or without progress while their kind moves.
std::string problems(const PartitionSnapshot& s) {
  std::string items;
  for (const ContextSnapshot& context : s.contexts) {
    if (unreachable(context))
      items += std::string("<li class=\"problem-context\"><b>") + e(context.url) + "</b> " + e(unreachable_text(context, s.time_ms)) +
               "</li>\n";
    else if (!context.attention.empty())
      items += std::string("<li class=\"problem-context\"><b>") + e(context.url) + "</b> " + e(context.attention) + "</li>\n";
    for (const ApplicationSnapshot& app : context.applications) {
      if (app.state == "Failed")
        items += std::string("<li class=\"problem-application\"><b>") + e(app.class_name) + " " + std::to_string(app.instance) +
                 "</b> (tid " + std::to_string(app.tid) + ", " + e(context.url) + ") Failed: <span class=\"reason\">" +
                 e(app.reason) + "</span></li>\n";
      else if (!app.attention.empty())
        items += std::string("<li class=\"problem-application\"><b>") + e(app.class_name) + " " + std::to_string(app.instance) +
                 "</b> (tid " + std::to_string(app.tid) + ", " + e(context.url) + ") " + e(app.state) + ": " +
                 e(app.attention) + "</li>\n";
    }
  }
  if (items.empty()) return {};
  return std::string("<section id=\"problems\" class=\"problems\"><h2>Needs attention</h2>\n<ul>\n") + items + "</ul></section>\n";
}

std::string states_text(const KindSnapshot& kind) {
  std::string html;
  for (const auto& [state, count] : kind.states) {
    if (!html.empty()) html += " ";
    html += std::string("<span class=\"") + state_class(state) + "\">" + std::to_string(count) + " " + e(state) + "</span>";
  }
  return html;
}

std::string kinds(const PartitionSnapshot& s) {
  std::string html = "<h2>By kind</h2>\n";
  if (s.kinds.empty()) return html + "<p class=\"muted\">no applications</p>\n";
  html += "<table id=\"kinds\"><tr><th>Class</th><th>Applications</th><th>States</th><th>events/s</th><th>GB/s</th></tr>\n";
  for (const KindSnapshot& kind : s.kinds) {
    html += std::string("<tr data-class=\"") + e(kind.class_name) + "\"><td>" + e(kind.class_name) + "</td><td class=\"number\">" +
            std::to_string(kind.applications) + "</td><td>" + states_text(kind) + "</td><td class=\"number events\">" +
            rate_text(kind.events_per_second) + "</td><td class=\"number bytes\">" +
            byte_rate_text(kind.bytes_per_second) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

// Every subscription to the streams of the partition's applications, one row each, those whose policy is dropping
// first, at most kSubscriptionsShown: who samples which stream, at what policy, and what its policy drops.
std::string streams(const PartitionSnapshot& s) {
  if (s.subscriptions == 0) return {};
  std::string html = "<h2>Streams</h2>\n<table id=\"subscriptions\"><tr><th>Publisher</th><th>Stream</th><th>Subscriber</th>"
                     "<th>Policy</th><th>delivered/s</th><th>dropped/s</th><th>skipped/s</th><th>Delivered</th>"
                     "<th>Dropped</th><th>Queued</th><th>Lag</th></tr>\n";
  std::size_t shown = 0;
  for (const bool dropping : {true, false})
    for (const ContextSnapshot& context : s.contexts)
      for (const ApplicationSnapshot& app : context.applications)
        for (const SubscriptionSnapshot& sub : app.subscriptions) {
          if ((sub.dropped_per_second > 0) != dropping || shown == kSubscriptionsShown) continue;
          ++shown;
          html += std::string("<tr class=\"subscription\" data-tid=\"") + std::to_string(app.tid) + "\"><td>" +
                  e(app.class_name) + " " + std::to_string(app.instance) + " <span class=\"muted\">(tid " +
                  std::to_string(app.tid) + ", " + e(context.url) + ")</span></td><td>" + e(sub.stream) +
                  "</td><td class=\"subscriber\">" + e(sub.subscriber) + "</td><td class=\"policy\">" + e(sub.policy) +
                  "</td><td class=\"number delivered\">" + rate_text(sub.delivered_per_second) +
                  "</td><td class=\"number dropped" + (dropping ? " warn" : "") + "\">" +
                  rate_text(sub.dropped_per_second) + "</td><td class=\"number\">" + rate_text(sub.skipped_per_second) +
                  "</td><td class=\"number\">" + display_number(sub.delivered) + "</td><td class=\"number\">" +
                  display_number(sub.dropped) + "</td><td class=\"number\">" + display_number(sub.queued) +
                  "</td><td class=\"number\">" + display_number(sub.lag) + "</td></tr>\n";
        }
  html += "</table>\n";
  if (s.subscriptions > shown)
    html += std::string("<p class=\"muted\">") + std::to_string(shown) + " of " + std::to_string(s.subscriptions) +
            " subscriptions listed: each publisher's page lists its own</p>\n";
  return html;
}

std::string applications_table(const ContextSnapshot& context) {
  if (context.applications.empty()) return "<p class=\"muted\">no applications</p>\n";
  const bool linked = context.status == ContextSnapshot::Status::up;
  std::string html =
      "<table class=\"applications\"><tr><th>TID</th><th>Class</th><th>Instance</th><th>State</th><th>events/s</th>"
      "<th>GB/s</th><th>Reason</th></tr>\n";
  for (const ApplicationSnapshot& app : context.applications) {
    const std::string tid = std::to_string(app.tid);
    const std::string css = state_class(app.state);
    html += std::string("<tr class=\"app ") + css + "\" data-tid=\"" + tid + "\"><td>" +
            (linked ? std::string("<a href=\"") + e(context.url) + "/app/" + tid + "\">" + tid + "</a>" : tid) + "</td><td>" +
            e(app.class_name) + "</td><td class=\"number\">" + std::to_string(app.instance) + "</td><td class=\"state " +
            css + "\">" + e(app.state) + "</td><td class=\"number events\">" + rate_text(app.events_per_second) +
            "</td><td class=\"number bytes\">" + byte_rate_text(app.bytes_per_second) + "</td><td class=\"reason\">" +
            e(app.reason.empty() ? app.attention : app.reason) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string transports_table(const ContextSnapshot& context) {
  if (context.transports.empty()) return {};
  std::string html =
      "<table class=\"transports\"><tr><th>Transport</th><th>Endpoint</th><th>frames/s out</th><th>frames/s in</th>"
      "<th>GB/s out</th><th>GB/s in</th><th>Connections</th></tr>\n";
  for (const TransportSnapshot& t : context.transports) {
    std::string connections = std::string("<span class=\"good\">") + std::to_string(t.connections_up) + " up</span>";
    const unsigned down = t.connections_total - std::min(t.connections_up, t.connections_total);
    if (down != 0) {
      connections += std::string(", <span class=\"bad\">") + std::to_string(down) + " down:";
      for (const std::string& remote : t.down) connections += std::string(" ") + e(remote);
      if (down > t.down.size()) connections += " ...";
      connections += "</span>";
    }
    if (t.connections_starved != 0)
      connections += std::string(", <span class=\"bad\">") + std::to_string(t.connections_starved) + " starved</span>";
    html += std::string("<tr><td>") + e(t.protocol) + "</td><td>" + e(t.endpoint) + "</td><td class=\"number\">" +
            rate_text(t.frames_sent_per_second) + "</td><td class=\"number\">" +
            rate_text(t.frames_received_per_second) + "</td><td class=\"number\">" +
            byte_rate_text(t.bytes_sent_per_second) + "</td><td class=\"number\">" +
            byte_rate_text(t.bytes_received_per_second) + "</td><td class=\"connections\">" + connections +
            "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string pools_details(const ContextSnapshot& context) {
  if (context.pools.empty()) return {};
  std::uint64_t used = 0, reserved = 0, failed = 0;
  for (const PoolSnapshot& pool : context.pools) {
    used += pool.bytes_used;
    reserved += pool.bytes_reserved;
    failed += pool.failed_allocations;
  }
  std::string html = std::string("<details data-key=\"pools ") + e(context.url) + "\"><summary>Pools: " +
                     std::to_string(context.pools.size()) + ", " + bytes_text(static_cast<double>(used)) + " of " +
                     bytes_text(static_cast<double>(reserved)) + " in use (" + percent(used, reserved) + ")";
  if (failed != 0) html += std::string(", <span class=\"bad\">") + std::to_string(failed) + " failed allocations</span>";
  html += "</summary>\n<table class=\"pools\"><tr><th>Pool</th><th>In use</th><th>Reserved</th><th>Occupancy</th>"
          "<th>Blocks used</th><th>Blocks</th><th>Failed allocations</th></tr>\n";
  for (const PoolSnapshot& pool : context.pools) {
    html += std::string("<tr><td>") + e(pool.name) + "</td><td class=\"number\">" + bytes_text(static_cast<double>(pool.bytes_used)) +
            "</td><td class=\"number\">" + bytes_text(static_cast<double>(pool.bytes_reserved)) +
            "</td><td class=\"number\">" + percent(pool.bytes_used, pool.bytes_reserved) + "</td><td class=\"number\">" +
            std::to_string(pool.blocks_used) + "</td><td class=\"number\">" + std::to_string(pool.blocks_total) +
            "</td><td class=\"number" + (pool.failed_allocations != 0 ? " bad" : "") + "\">" +
            std::to_string(pool.failed_allocations) + "</td></tr>\n";
  }
  return html + "</table></details>\n";
}

std::string context_section(const ContextSnapshot& context, std::int64_t now_ms) {
  const std::string status = to_string(context.status);
  std::string html = std::string("<section class=\"context status-") + status + "\" data-url=\"" + e(context.url) + "\">\n<h3>";
  html += context.status == ContextSnapshot::Status::up ? std::string("<a href=\"") + e(context.url) + "/\">" + e(context.url) + "</a>"
                                                        : e(context.url);
  html += std::string(" <span class=\"status\">") + status + "</span>";
  if (context.status == ContextSnapshot::Status::up) {
    html += std::string(" <span class=\"muted\">run ") + (context.run == 0 ? std::string("none") : std::to_string(context.run)) +
            ", up " + duration_text(context.uptime_seconds) + "</span>";
  }
  html += "</h3>\n";
  if (unreachable(context))
    html += std::string("<p class=\"status-reason\">") + e(unreachable_text(context, now_ms)) + "</p>\n";
  else if (!context.attention.empty())
    html += std::string("<p class=\"status-reason\">") + e(context.attention) + "</p>\n";
  html += applications_table(context) + transports_table(context) + pools_details(context);
  return html + "</section>\n";
}

// The opening of the fold and its one line: "251 contexts fine: up, 251 applications Enabled, every connection up".
std::string fine_summary(const PartitionSnapshot& s, std::size_t contexts, std::size_t applications) {
  return std::string("<details id=\"fine\" data-key=\"fine contexts\"><summary id=\"fine-count\">") +
         std::to_string(contexts) + " contexts fine: up, " + std::to_string(applications) + " applications " +
         e(s.usual_state) + ", every connection up</summary>\n";
}

// Every context; above kFoldContextsAbove those that need attention first and the others folded in one closed
// <details>, so that hundreds of contexts read as the few that matter and one line for the rest.
std::string contexts(const PartitionSnapshot& s) {
  std::string html = "<h2>Contexts</h2>\n";
  if (s.contexts.size() <= kFoldContextsAbove) {
    for (const ContextSnapshot& context : s.contexts) html += context_section(context, s.time_ms);
    return html;
  }
  std::string fine;
  std::size_t fine_count = 0, fine_applications = 0;
  for (const ContextSnapshot& context : s.contexts) {
    if (needs_attention(context)) {
      html += context_section(context, s.time_ms);
    } else {
      fine += context_section(context, s.time_ms);
      ++fine_count;
      fine_applications += context.applications.size();
    }
  }
  return html + fine_summary(s, fine_count, fine_applications) + fine + "</details>\n";
}

// The same markup as the C++ above, from the JSON of /api/partition. Everything from the JSON goes through esc().
constexpr const char* kPartitionScript = R"JS(
const known = ['Halted', 'Configured', 'Enabled', 'Failed', 'Unknown'];
const stateClass = s => 'state-' + (known.includes(s) ? s : 'other');
const problemContext = c => c.status === 'unreachable' || c.status === 'refused';
function unreachableText(c, now) {
  let text = c.status;
  text += c.last_seen_ms ? ', last seen ' + utcTime(c.last_seen_ms) + ' (' + duration((now - c.last_seen_ms) / 1000) + ' ago)'
                         : ', never seen';
  return text + ': ' + c.reason;
}
function summary(s) {
  const t = s.totals;
  let h = '<p class="summary">';
  h += '<span>run <b id="run">' + (s.run ? s.run : 'none') + '</b></span>';
  h += '<span>run time <b id="run-time">' + duration(s.run ? s.run_seconds : null) + '</b></span>';
  h += '<span>contexts <b id="contexts"' + (t.contexts_unreachable ? ' class="bad"' : '') + '>' +
       (t.contexts - t.contexts_unreachable) + ' of ' + t.contexts + ' answering</b></span>';
  h += '<span>applications <b>' + t.applications + '</b>';
  if (t.failed) h += ', <b id="failed" class="bad">' + t.failed + ' Failed</b>';
  h += '</span><span>connections <b class="good">' + t.connections_up + ' up</b>';
  if (t.connections_down) h += ', <b class="bad">' + t.connections_down + ' down</b>';
  if (t.connections_starved) h += ', <b class="bad">' + t.connections_starved + ' starved</b>';
  h += '</span><span class="muted">updated <span id="updated">' + utcTime(s.time_ms) + '</span>';
  if (!s.polled) h += ' (waiting for the first answers)';
  return h + '</span></p>\n';
}
function needsAttention(c) { return !!c.attention || c.applications.some(a => a.attention); }
function problems(s) {
  let items = '';
  for (const c of s.contexts) {
    if (problemContext(c))
      items += '<li class="problem-context"><b>' + esc(c.url) + '</b> ' + esc(unreachableText(c, s.time_ms)) + '</li>\n';
    else if (c.attention)
      items += '<li class="problem-context"><b>' + esc(c.url) + '</b> ' + esc(c.attention) + '</li>\n';
    for (const a of c.applications) {
      if (a.state === 'Failed')
        items += '<li class="problem-application"><b>' + esc(a.class) + ' ' + a.instance + '</b> (tid ' + a.tid + ', ' +
                 esc(c.url) + ') Failed: <span class="reason">' + esc(a.reason) + '</span></li>\n';
      else if (a.attention)
        items += '<li class="problem-application"><b>' + esc(a.class) + ' ' + a.instance + '</b> (tid ' + a.tid + ', ' +
                 esc(c.url) + ') ' + esc(a.state) + ': ' + esc(a.attention) + '</li>\n';
    }
  }
  if (!items) return '';
  return '<section id="problems" class="problems"><h2>Needs attention</h2>\n<ul>\n' + items + '</ul></section>\n';
}
function kinds(s) {
  let h = '<h2>By kind</h2>\n';
  if (!s.kinds.length) return h + '<p class="muted">no applications</p>\n';
  h += '<table id="kinds"><tr><th>Class</th><th>Applications</th><th>States</th><th>events/s</th><th>GB/s</th></tr>\n';
  for (const k of s.kinds) {
    const states = Object.entries(k.states).map(([st, n]) => '<span class="' + stateClass(st) + '">' + n + ' ' + esc(st) + '</span>').join(' ');
    h += '<tr data-class="' + esc(k.class) + '"><td>' + esc(k.class) + '</td><td class="number">' + k.applications +
         '</td><td>' + states + '</td><td class="number events">' + rate(k.events_per_second) +
         '</td><td class="number bytes">' + byteRate(k.bytes_per_second) + '</td></tr>\n';
  }
  return h + '</table>\n';
}
const count = v => known_number(v) ? String(Math.round(v)) : '-';  // display_number() of a whole count
function streams(s) {
  if (!s.totals.subscriptions) return '';
  let h = '<h2>Streams</h2>\n<table id="subscriptions"><tr><th>Publisher</th><th>Stream</th><th>Subscriber</th>' +
          '<th>Policy</th><th>delivered/s</th><th>dropped/s</th><th>skipped/s</th><th>Delivered</th>' +
          '<th>Dropped</th><th>Queued</th><th>Lag</th></tr>\n';
  let shown = 0;
  for (const dropping of [true, false])
    for (const c of s.contexts)
      for (const a of c.applications)
        for (const u of a.subscriptions || []) {
          if ((u.dropped_per_second > 0) !== dropping || shown === s.subscriptions_shown) continue;
          ++shown;
          h += '<tr class="subscription" data-tid="' + a.tid + '"><td>' + esc(a.class) + ' ' + a.instance +
               ' <span class="muted">(tid ' + a.tid + ', ' + esc(c.url) + ')</span></td><td>' + esc(u.stream) +
               '</td><td class="subscriber">' + esc(u.subscriber) + '</td><td class="policy">' + esc(u.policy) +
               '</td><td class="number delivered">' + rate(u.delivered_per_second) + '</td><td class="number dropped' +
               (dropping ? ' warn' : '') + '">' + rate(u.dropped_per_second) + '</td><td class="number">' +
               rate(u.skipped_per_second) + '</td><td class="number">' + count(u.delivered) + '</td><td class="number">' +
               count(u.dropped) + '</td><td class="number">' + count(u.queued) + '</td><td class="number">' +
               count(u.lag) + '</td></tr>\n';
        }
  h += '</table>\n';
  if (s.totals.subscriptions > shown)
    h += '<p class="muted">' + shown + ' of ' + s.totals.subscriptions +
         ' subscriptions listed: each publisher\'s page lists its own</p>\n';
  return h;
}
function applications(c) {
  if (!c.applications.length) return '<p class="muted">no applications</p>\n';
  const linked = c.status === 'up';
  let h = '<table class="applications"><tr><th>TID</th><th>Class</th><th>Instance</th><th>State</th><th>events/s</th>' +
          '<th>GB/s</th><th>Reason</th></tr>\n';
  for (const a of c.applications) {
    const css = stateClass(a.state);
    h += '<tr class="app ' + css + '" data-tid="' + a.tid + '"><td>' +
         (linked ? '<a href="' + esc(c.url) + '/app/' + a.tid + '">' + a.tid + '</a>' : a.tid) + '</td><td>' +
         esc(a.class) + '</td><td class="number">' + a.instance + '</td><td class="state ' + css + '">' + esc(a.state) +
         '</td><td class="number events">' + rate(a.events_per_second) + '</td><td class="number bytes">' +
         byteRate(a.bytes_per_second) + '</td><td class="reason">' + esc(a.reason || a.attention) + '</td></tr>\n';
  }
  return h + '</table>\n';
}
function transports(c) {
  if (!c.transports.length) return '';
  let h = '<table class="transports"><tr><th>Transport</th><th>Endpoint</th><th>frames/s out</th><th>frames/s in</th>' +
          '<th>GB/s out</th><th>GB/s in</th><th>Connections</th></tr>\n';
  for (const t of c.transports) {
    let conn = '<span class="good">' + t.connections_up + ' up</span>';
    const down = Math.max(0, t.connections_total - t.connections_up);
    if (down)
      conn += ', <span class="bad">' + down + ' down:' + t.connections_down.map(r => ' ' + esc(r)).join('') +
              (down > t.connections_down.length ? ' ...' : '') + '</span>';
    if (t.connections_starved) conn += ', <span class="bad">' + t.connections_starved + ' starved</span>';
    h += '<tr><td>' + esc(t.protocol) + '</td><td>' + esc(t.endpoint) + '</td><td class="number">' +
         rate(t.frames_sent_per_second) + '</td><td class="number">' + rate(t.frames_received_per_second) +
         '</td><td class="number">' + byteRate(t.bytes_sent_per_second) + '</td><td class="number">' +
         byteRate(t.bytes_received_per_second) + '</td><td class="connections">' + conn + '</td></tr>\n';
  }
  return h + '</table>\n';
}
const percent = (part, whole) => whole ? (100 * part / whole).toFixed(0) + '%' : '-';
function pools(c) {
  if (!c.pools.length) return '';
  let used = 0, reserved = 0, failed = 0;
  for (const p of c.pools) { used += p.bytes_used; reserved += p.bytes_reserved; failed += p.failed_allocations; }
  let h = '<details data-key="pools ' + esc(c.url) + '"><summary>Pools: ' + c.pools.length + ', ' + bytes(used) + ' of ' +
          bytes(reserved) + ' in use (' + percent(used, reserved) + ')';
  if (failed) h += ', <span class="bad">' + failed + ' failed allocations</span>';
  h += '</summary>\n<table class="pools"><tr><th>Pool</th><th>In use</th><th>Reserved</th><th>Occupancy</th>' +
       '<th>Blocks used</th><th>Blocks</th><th>Failed allocations</th></tr>\n';
  for (const p of c.pools)
    h += '<tr><td>' + esc(p.name) + '</td><td class="number">' + bytes(p.bytes_used) + '</td><td class="number">' +
         bytes(p.bytes_reserved) + '</td><td class="number">' + percent(p.bytes_used, p.bytes_reserved) +
         '</td><td class="number">' + p.blocks_used + '</td><td class="number">' + p.blocks_total +
         '</td><td class="number' + (p.failed_allocations ? ' bad' : '') + '">' + p.failed_allocations + '</td></tr>\n';
  return h + '</table></details>\n';
}
function context(c, now) {
  let h = '<section class="context status-' + esc(c.status) + '" data-url="' + esc(c.url) + '">\n<h3>';
  h += c.status === 'up' ? '<a href="' + esc(c.url) + '/">' + esc(c.url) + '</a>' : esc(c.url);
  h += ' <span class="status">' + esc(c.status) + '</span>';
  if (c.status === 'up')
    h += ' <span class="muted">run ' + (c.run ? c.run : 'none') + ', up ' + duration(c.uptime_seconds) + '</span>';
  h += '</h3>\n';
  if (problemContext(c)) h += '<p class="status-reason">' + esc(unreachableText(c, now)) + '</p>\n';
  else if (c.attention) h += '<p class="status-reason">' + esc(c.attention) + '</p>\n';
  return h + applications(c) + transports(c) + pools(c) + '</section>\n';
}
// Above fold_above contexts the fine ones are folded; their sections are drawn only while the fold is open, so a
// page of hundreds of contexts redraws what is read.
function contexts(s) {
  let h = '<h2>Contexts</h2>\n';
  if (s.contexts.length <= s.fold_above) return h + s.contexts.map(c => context(c, s.time_ms)).join('');
  const open = !!document.querySelector('#live details[data-key="fine contexts"][open]');
  let fine = '', count = 0, applications = 0;
  for (const c of s.contexts) {
    if (needsAttention(c)) { h += context(c, s.time_ms); continue; }
    ++count;
    applications += c.applications.length;
    if (open) fine += context(c, s.time_ms);
  }
  return h + '<details id="fine" data-key="fine contexts"><summary id="fine-count">' + count + ' contexts fine: up, ' +
         applications + ' applications ' + esc(s.usual_state) + ', every connection up</summary>\n' +
         (open ? fine : '<p class="muted">(listed at the next update)</p>\n') + '</details>\n';
}
function render(s) {
  return summary(s) + kinds(s) + problems(s) + streams(s) + contexts(s);
}
live('/api/partition', render);
)JS";

}  // namespace

std::string partition_page(const PartitionSnapshot& s) {
  std::string html = page_head("daqx partition " + s.partition, true);
  html += std::string("<header><h1>daqx partition <span id=\"partition\">") + e(s.partition) +
          "</span></h1><p class=\"links\"><a href=\"/api/partition\">JSON</a><span id=\"connection\" "
          "class=\"muted\"></span></p></header>\n";
  html += std::string("<main id=\"live\" data-interval=\"") + std::to_string(static_cast<int>(s.interval_seconds * 1000)) + "\">\n";
  html += summary(s) + kinds(s) + problems(s) + streams(s) + contexts(s);
  html += "</main>\n<script>\n";
  html += script_helpers();
  html += kPartitionScript;
  html += "</script>\n";
  return html + kPageEnd;
}

}  // namespace daqx::http
