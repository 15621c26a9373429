// The HTML status pages: one of the whole executive, one per application. The first screen holds what an operator
// looks for first (states, rates, failures, connections); detail (pool size classes, threads, every counter) is
// folded away. Complete without JavaScript; the script only redraws #live from the same page every few seconds.
#include <cmath>
#include <cstdio>

#include "control_routes.hpp"
#include "daqx/control/headline_counters.hpp"
#include "daqx/services/text.hpp"
#include "html_page.hpp"
#include "page_rates.hpp"
#include "partition_snapshot.hpp"

namespace daqx::http {
namespace {

std::string cores_text(const std::vector<int>& cores) {
  if (cores.empty()) return "-";
  std::string text;
  for (int core : cores) {
    if (!text.empty()) text += ",";
    text += std::to_string(core);
  }
  return text;
}

std::string labels_text(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string text;
  for (const auto& [name, value] : labels) {
    if (!text.empty()) text += ", ";
    text += name + "=" + value;
  }
  return text;
}

std::string cell(const std::string& text) { return "<td>" + html_escape(text) + "</td>"; }
std::string number_cell(double value) { return "<td class=\"number\">" + display_number(value) + "</td>"; }
std::string state_cell(State state) {
  const std::string name(to_string(state));
  return "<td class=\"state state-" + name + "\">" + name + "</td>";
}

// Counters of a transport or connection, compact in one cell.
std::string metrics_cell(const std::vector<Metric>& metrics) {
  if (metrics.empty()) return "<td class=\"muted\">-</td>";
  std::string html = "<td>";
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (i > 0) html += "<br>";
    html += html_escape(metrics[i].name);
    if (!metrics[i].labels.empty()) html += " {" + html_escape(labels_text(metrics[i].labels)) + "}";
    html += " = " + display_number(metrics[i].value);
  }
  return html + "</td>";
}

// Counters get a rate column: per second between the last two looks at the page (PageRates).
std::string metrics_table(const std::vector<Metric>& metrics, const PageRates::Rates& rates, const std::string& prefix) {
  if (metrics.empty()) return "<p class=\"muted\">none</p>\n";
  std::string html =
      "<table class=\"metrics\">\n<tr><th>Name</th><th>Kind</th><th>Value</th><th>per second</th><th>Labels</th>"
      "<th>Help</th></tr>\n";
  for (const Metric& metric : metrics) {
    const auto rate = metric.kind == Metric::Kind::counter && metric.labels.empty() ? rates.find(prefix + metric.name)
                                                                                   : rates.end();
    html += "<tr data-metric=\"" + html_escape(metric.name) + "\">" + cell(metric.name) +
            cell(metric.kind == Metric::Kind::counter ? "counter" : "gauge") + number_cell(metric.value) +
            "<td class=\"number rate\">" + (rate != rates.end() ? rate_text(rate->second) : std::string("-")) +
            "</td>" + cell(labels_text(metric.labels)) + "<td class=\"help\">" + html_escape(metric.help) +
            "</td></tr>\n";
  }
  return html + "</table>\n";
}

// The application's headline rates (partition_snapshot.hpp): NaN when it reports none of those counters.
double headline_rate(const ApplicationStatus& application, const PageRates::Rates& rates, const auto& counters) {
  for (const auto& counter : counters) {
    const auto found = rates.find(PageRates::application_key(application.tid, counter_name(counter)));
    if (found != rates.end()) return found->second;
  }
  return kNoRate;
}

double rate_of(const PageRates::Rates& rates, const std::string& key) {
  const auto found = rates.find(key);
  return found == rates.end() ? kNoRate : found->second;
}

std::string state_row_class(State state) { return std::string("state-") + std::string(to_string(state)); }

std::string applications_section(const std::vector<ApplicationStatus>& applications, const PageRates::Rates& rates) {
  std::string html = "<h2>Applications</h2>\n";
  if (applications.empty()) return html + "<p class=\"muted\">none</p>\n";
  html += "<table id=\"applications\">\n<tr><th>TID</th><th>Class</th><th>Instance</th><th>Name</th><th>State</th>"
          "<th>events/s</th><th>GB/s</th><th>Reason</th></tr>\n";
  for (const ApplicationStatus& application : applications) {
    const std::string tid = std::to_string(application.tid);
    html += "<tr class=\"app " + state_row_class(application.state) + "\" data-tid=\"" + tid + "\"><td><a href=\"/app/" +
            tid + "\">" + tid + "</a></td>" + cell(application.class_name) + number_cell(application.instance) +
            cell(application.name) + state_cell(application.state) + "<td class=\"number events\">" +
            rate_text(headline_rate(application, rates, kHeadlineItemCounters)) + "</td><td class=\"number bytes\">" +
            byte_rate_text(headline_rate(application, rates, kHeadlineByteCounters)) + "</td><td class=\"reason\">" +
            html_escape(application.reason) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

double metric_value(const std::vector<Metric>& metrics, const char* name) {
  for (const Metric& metric : metrics)
    if (metric.name == name && metric.labels.empty()) return metric.value;
  return kNoRate;
}

// On the first screen: every connection, up or down, with its frame rates; its counters are in the folded detail.
std::string connections_section(const std::vector<TransportStatus>& transports, const PageRates::Rates& rates) {
  std::string rows;
  for (const TransportStatus& transport : transports) {
    for (const ConnectionInfo& connection : transport.connections) {
      const auto key = [&](const char* counter) {
        return PageRates::connection_key(transport.protocol, connection.remote, counter);
      };
      rows += "<tr>" + cell(transport.protocol) + cell(connection.remote) + number_cell(connection.peer) +
              cell(connection.outgoing ? "out" : "in") +
              (connection.up ? "<td class=\"up\">up</td>" : "<td class=\"down\">down</td>") +
              "<td class=\"number\">" + rate_text(rate_of(rates, key("frames_sent"))) + "</td><td class=\"number\">" +
              rate_text(rate_of(rates, key("frames_received"))) + "</td></tr>\n";
    }
  }
  std::string html = "<h2>Connections</h2>\n";
  if (rows.empty()) return html + "<p class=\"muted\">none</p>\n";
  return html + "<table id=\"connections\">\n<tr><th>Protocol</th><th>Remote</th><th>Peer</th><th>Direction</th>"
                "<th>Link</th><th>frames/s out</th><th>frames/s in</th></tr>\n" + rows + "</table>\n";
}

std::string transports_section(const std::vector<TransportStatus>& transports, const PageRates::Rates& rates) {
  std::string html = "<h2>Transports</h2>\n";
  if (transports.empty()) return html + "<p class=\"muted\">none</p>\n";
  html += "<table id=\"transports\">\n<tr><th>Protocol</th><th>Endpoint</th><th>frames/s out</th><th>frames/s in</th>"
          "<th>GB/s out</th><th>GB/s in</th></tr>\n";
  for (const TransportStatus& transport : transports) {
    const auto key = [&](const char* counter) { return PageRates::transport_key(transport.protocol, counter); };
    html += "<tr>" + cell(transport.protocol) + cell(transport.endpoint) + "<td class=\"number\">" +
            rate_text(rate_of(rates, key("frames_sent"))) + "</td><td class=\"number\">" +
            rate_text(rate_of(rates, key("frames_received"))) + "</td><td class=\"number\">" +
            byte_rate_text(rate_of(rates, key("bytes_sent"))) + "</td><td class=\"number\">" +
            byte_rate_text(rate_of(rates, key("bytes_received"))) + "</td></tr>\n";
  }
  html += "</table>\n<details data-key=\"transport-detail\"><summary>Transport and connection counters</summary>\n"
          "<table>\n<tr><th>Protocol</th><th>Endpoint</th><th>Offers</th><th>Counters</th></tr>\n";
  for (const TransportStatus& transport : transports) {
    html += "<tr>" + cell(transport.protocol) + cell(transport.endpoint) +
            cell(describe_capabilities(transport.capabilities)) + metrics_cell(transport.metrics) + "</tr>\n";
  }
  std::string rows;
  for (const TransportStatus& transport : transports)
    for (const ConnectionInfo& connection : transport.connections)
      rows += "<tr>" + cell(transport.protocol) + cell(connection.remote) + number_cell(connection.peer) +
              metrics_cell(connection.metrics) + "</tr>\n";
  html += "</table>\n";
  if (!rows.empty())
    html += "<table>\n<tr><th>Protocol</th><th>Remote</th><th>Peer</th><th>Counters</th></tr>\n" + rows + "</table>\n";
  return html + "</details>\n";
}

// One line per pool on the summary (occupancy, failures); its size classes folded under it.
std::string pools_section(const std::vector<PoolStatus>& pools) {
  if (pools.empty()) return "<h2>Pools</h2>\n<p class=\"muted\">none</p>\n";
  std::size_t used_bytes = 0;
  std::uint64_t failed = 0;
  std::size_t reserved = 0;
  for (const PoolStatus& pool : pools) {
    for (const mem::SizeClassStats& size_class : pool.stats.classes) used_bytes += size_class.blocks_used * size_class.block_size;
    failed += pool.stats.failed_allocations();
    reserved += pool.stats.bytes_reserved;
  }
  std::string html = "<details data-key=\"pools\"><summary><b>Pools</b>: " + std::to_string(pools.size()) + ", " +
                     bytes_text(static_cast<double>(used_bytes)) + " of " + bytes_text(static_cast<double>(reserved)) +
                     " in use";
  if (failed != 0) html += ", <span class=\"warn\">" + std::to_string(failed) + " failed allocations</span>";
  html +=
      "</summary>\n<table id=\"pools\">\n<tr><th>Pool</th><th>Allocator</th><th>NUMA node</th><th>Reserved bytes</th><th>Block size</th>"
      "<th>Total</th><th>Used</th><th>Free</th><th>High water</th><th>Failed allocations</th></tr>\n";
  for (const PoolStatus& pool : pools) {
    const std::size_t rows = pool.stats.classes.empty() ? 1 : pool.stats.classes.size();
    const std::string span = "<td rowspan=\"" + std::to_string(rows) + "\">";
    const std::string node = pool.numa_node < 0 ? "-" : std::to_string(pool.numa_node);
    const std::string number_span = "<td class=\"number\" rowspan=\"" + std::to_string(rows) + "\">";
    const std::string pool_cells = span + html_escape(pool.stats.name) + "</td>" + span +
                                   html_escape(pool.stats.allocator) + "</td>" + number_span + node + "</td>" +
                                   number_span + display_number(static_cast<double>(pool.stats.bytes_reserved)) +
                                   "</td>";
    if (pool.stats.classes.empty()) {
      html += "<tr>" + pool_cells + "<td colspan=\"6\" class=\"muted\">no size classes</td></tr>\n";
      continue;
    }
    for (std::size_t i = 0; i < pool.stats.classes.size(); ++i) {
      const mem::SizeClassStats& size_class = pool.stats.classes[i];
      html += "<tr>" + (i == 0 ? pool_cells : std::string()) +
              number_cell(static_cast<double>(size_class.block_size)) +
              number_cell(static_cast<double>(size_class.blocks_total)) +
              number_cell(static_cast<double>(size_class.blocks_used)) +
              number_cell(static_cast<double>(size_class.blocks_free)) +
              number_cell(static_cast<double>(size_class.high_water));
      html += size_class.failed_allocations > 0
                  ? "<td class=\"number warn\">" + std::to_string(size_class.failed_allocations) + "</td>"
                  : number_cell(0);
      html += "</tr>\n";
    }
  }
  return html + "</table>\n</details>\n";
}

std::string threads_section(const std::vector<ThreadStatus>& threads) {
  if (threads.empty()) return "<details data-key=\"threads\"><summary><b>Threads</b>: none</summary></details>\n";
  std::size_t mismatches = 0;
  std::string rows;
  for (const ThreadStatus& thread : threads) {
    // A pinning the kernel did not honour is worth seeing: it costs throughput silently.
    const bool mismatch = !thread.cores_wanted.empty() && thread.cores_wanted != thread.cores;
    if (mismatch) ++mismatches;
    rows += "<tr>" + cell(thread.name) + number_cell(thread.kernel_tid) + cell(cores_text(thread.cores_wanted)) +
            (mismatch ? "<td class=\"warn\">" : "<td>") + html_escape(cores_text(thread.cores)) + "</td></tr>\n";
  }
  std::string html = "<details data-key=\"threads\"><summary><b>Threads</b>: " + std::to_string(threads.size());
  if (mismatches != 0) html += ", <span class=\"warn\">" + std::to_string(mismatches) + " not on the cores asked for</span>";
  html += "</summary>\n<table>\n<tr><th>Name</th><th>Kernel TID</th><th>Wanted cores</th><th>Actual cores</th></tr>\n";
  return html + rows + "</table>\n</details>\n";
}

// Buttons and the parameter form post to the JSON API and show its answer; the live part shows the effect. When changes
// need the partition's token, it is typed into the page and kept for the browser tab only (sessionStorage), so the
// reload after a command does not ask for it again. No login: the token is the only credential there is.
std::string control_script() {
  return R"(<script>
function token() {
  const field = document.getElementById('token');
  if (field && field.value) sessionStorage.setItem('daqx-token', field.value);
  return sessionStorage.getItem('daqx-token') || '';
}
async function post(url, body) {
  const result = document.getElementById('result');
  result.textContent = '...';
  const headers = {'Content-Type': 'application/json'};
  if (token()) headers['Authorization'] = 'Bearer ' + token();
  try {
    const response = await fetch(url, {method: 'POST', headers: headers, body: JSON.stringify(body)});
    const answer = await response.json();
    if (response.status == 401 || response.status == 403) sessionStorage.removeItem('daqx-token');
    result.textContent = (response.ok ? 'done' : 'refused (' + response.status + ')') +
                         (answer.message || answer.error ? ': ' + (answer.message || answer.error) : '');
  } catch (error) {
    result.textContent = 'failed: ' + error;
  }
}
</script>
)";
}

// Says that commands need the token, with a field for it on pages that have commands.
std::string token_notice(bool with_field) {
  std::string html = "<p>Changes need the partition's bearer token";
  if (with_field) {
    html += ": <input type=\"password\" id=\"token\" size=\"30\" autocomplete=\"off\" "
            "placeholder=\"token (kept for this tab only)\">";
  } else {
    html += " (daqxctl --token-file FILE, or type it on an application's page)";
  }
  return html + "</p>\n";
}

// The live part of an executive's page: the page itself is fetched again and its #live put in place of ours, so
// the page is drawn by one renderer (the server's) with or without scripts.
std::string live_script() {
  std::string script = "<script>\n";
  script += script_helpers();
  script += "live(location.pathname, text => {\n"
            "  const page = new DOMParser().parseFromString(text, 'text/html').getElementById('live');\n"
            "  if (!page) throw new Error('not a status page');\n"
            "  return page.innerHTML;\n"
            "}, true);\n</script>\n";
  return script;
}

}  // namespace

// Every text from outside (a partition, an application, a client) reaches a page through here: escaped for HTML,
// and valid UTF-8 whatever bytes it held (a byte that is not UTF-8 becomes U+FFFD, as in the JSON API, and so does
// a control character other than a tab or a line break, which HTML does not allow).
std::string html_escape(const std::string& text) {
  const std::string valid = strings::valid_utf8(text);
  std::string escaped;
  escaped.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      case '\'': escaped += "&#39;"; break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
          escaped += "\xef\xbf\xbd";
        } else {
          escaped += c;
        }
    }
  }
  return escaped;
}

std::string html_status_page(const ControlModel& model, bool changes_need_token, PageRates& page_rates,
                             bool partition_view) {
  const std::string partition = model.partition_name();
  const std::string context = model.context_url();
  const std::vector<ApplicationStatus> applications = model.applications();
  const std::vector<TransportStatus> transports = model.transports();
  const PageRates::Rates rates = page_rates.update(applications, transports);
  std::string html = page_head("daqx " + partition + " " + context, true);
  html += "<header><h1>daqx executive: " + html_escape(partition) + "</h1>\n<p>Context <code>" + html_escape(context) +
          "</code>";
  if (partition_view) html += " &middot; <a href=\"/partition\">whole partition</a>";
  html += " &middot; <a href=\"/api/applications\">JSON</a> &middot; <a href=\"/metrics\">metrics</a>"
          "<span id=\"connection\" class=\"muted\"></span></p></header>\n";
  if (changes_need_token) html += token_notice(false);
  html += "<main id=\"live\" data-interval=\"2000\">\n";

  std::size_t failed = 0, up = 0, down = 0;
  double uptime = kNoRate;
  for (const ApplicationStatus& application : applications)
    if (application.state == State::failed) ++failed;
  for (const TransportStatus& transport : transports)
    for (const ConnectionInfo& connection : transport.connections) (connection.up ? up : down)++;
  const std::vector<Metric> executive_metrics = model.executive_metrics();
  uptime = metric_value(executive_metrics, "uptime_seconds");
  const std::uint64_t run = model.run_number();
  html += "<p class=\"summary\"><span>run <b id=\"run\">" + (run == 0 ? std::string("none") : std::to_string(run)) +
          "</b></span><span>up <b>" + duration_text(uptime) + "</b></span><span>applications <b>" +
          std::to_string(applications.size()) + "</b>";
  if (failed != 0) html += ", <b id=\"failed\" class=\"bad\">" + std::to_string(failed) + " Failed</b>";
  html += "</span><span>connections <b class=\"good\">" + std::to_string(up) + " up</b>";
  if (down != 0) html += ", <b class=\"bad\">" + std::to_string(down) + " down</b>";
  html += "</span></p>\n";
  std::string problems;
  for (const ApplicationStatus& application : applications)
    if (application.state == State::failed)
      problems += "<li><b>" + html_escape(application.class_name) + " " + std::to_string(application.instance) +
                  "</b> (tid " + std::to_string(application.tid) + ") Failed: <span class=\"reason\">" +
                  html_escape(application.reason) + "</span></li>\n";
  if (!problems.empty())
    html += "<section id=\"problems\" class=\"problems\"><h2>Needs attention</h2>\n<ul>\n" + problems + "</ul></section>\n";

  html += applications_section(applications, rates);
  html += connections_section(transports, rates);
  html += transports_section(transports, rates);
  html += "<h2>Detail</h2>\n";
  html += pools_section(model.pools());
  html += threads_section(model.threads());
  html += "<details data-key=\"executive-counters\"><summary><b>Executive counters</b></summary>\n" +
          metrics_table(executive_metrics, {}, "") + "</details>\n";
  html += "</main>\n";
  html += live_script();
  return html + kPageEnd;
}

std::string html_application_page(const ControlModel& model, const ApplicationStatus& application,
                                  bool changes_need_token, PageRates& page_rates) {
  const std::string tid = std::to_string(application.tid);
  const std::string title = application.class_name + " " + std::to_string(application.instance) + " (tid " + tid + ")";
  // The whole executive's counters, as the status page samples them: the two pages share the samples.
  const PageRates::Rates rates = page_rates.update(model.applications(), model.transports());
  std::string html = page_head(title, true);
  html += control_script();
  html += "<header><p><a href=\"/\">&larr; " + html_escape(model.partition_name()) + " " +
          html_escape(model.context_url()) + "</a><span id=\"connection\" class=\"muted\"></span></p>\n";
  html += "<h1>" + html_escape(application.class_name) + " instance " + std::to_string(application.instance) +
          " <span class=\"muted\">tid " + tid + "</span></h1></header>\n";
  if (!application.name.empty()) html += "<p><code>" + html_escape(application.name) + "</code></p>\n";

  const std::string transition_url = "/api/applications/" + tid + "/transition";
  if (changes_need_token) html += token_notice(true);
  html += "<form onsubmit=\"return false\">";
  for (const char* command : {"configure", "enable", "stop", "halt"}) {
    html += "<button type=\"button\" onclick=\"post('" + transition_url + "', {command: '" + command + "'})\">" +
            command + "</button>";
  }
  html += "<span id=\"result\"></span></form>\n";

  html += "<main id=\"live\" data-interval=\"2000\">\n";
  const std::string state(to_string(application.state));
  html += "<p class=\"summary\"><span>State: <b id=\"state\" class=\"state-" + state + "\">" + state + "</b></span>";
  if (application.run != 0) html += "<span>run <b>" + std::to_string(application.run) + "</b></span>";
  html += "<span>events/s <b class=\"events\">" + rate_text(headline_rate(application, rates, kHeadlineItemCounters)) +
          "</b></span><span>GB/s <b class=\"bytes\">" +
          byte_rate_text(headline_rate(application, rates, kHeadlineByteCounters)) + "</b></span></p>\n";
  if (!application.reason.empty())
    html += "<section id=\"problems\" class=\"problems\"><p>Reason: <span class=\"reason\">" +
            html_escape(application.reason) + "</span></p></section>\n";
  html += "<h2>Metrics</h2>\n" + metrics_table(application.metrics, rates, PageRates::application_key(application.tid, ""));
  html += "<h2>Parameters</h2>\n";
  if (application.params.empty()) {
    html += "<p class=\"muted\">none</p>\n";
  } else {
    html += "<table id=\"parameters\">\n<tr><th>Name</th><th>Type</th><th>Value</th><th>Default</th><th>Unit</th><th>Help</th></tr>\n";
    for (const ParamView& param : application.params) {
      html += "<tr>" + cell(param.name) + cell(param.type) + cell(param.value) + cell(param.default_value) +
              cell(param.unit) + "<td class=\"help\">" + html_escape(param.help) + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  html += "</main>\n";
  if (!application.params.empty()) {
    html += "<form onsubmit=\"post('/api/applications/" + tid +
            "/parameters', {name: document.getElementById('param-name').value, "
            "value: document.getElementById('param-value').value}); return false\">\n<select id=\"param-name\">";
    for (const ParamView& param : application.params) {
      html += "<option value=\"" + html_escape(param.name) + "\">" + html_escape(param.name) + "</option>";
    }
    html += "</select> <input id=\"param-value\" size=\"30\"> <button type=\"submit\">set</button>"
            " <span class=\"muted\">(while Halted)</span></form>\n";
  }
  html += live_script();
  return html + kPageEnd;
}

std::string html_error_page(int status, const std::string& reason) {
  std::string html = page_head("daqx: " + std::to_string(status), false);
  html += "<h1>" + std::to_string(status) + "</h1>\n<p>" + html_escape(reason) + "</p>\n<p><a href=\"/\">status page</a></p>\n";
  return html + kPageEnd;
}

}  // namespace daqx::http
