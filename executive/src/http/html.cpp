// The HTML status pages: one of the whole executive, one per application; plain tables a person reads at a glance.
#include <cmath>
#include <cstdio>

#include "control_routes.hpp"

namespace daqx::http {
namespace {

constexpr const char* kStyle = R"(<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin-top: 0.4em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
.state-Halted { color: #666; } .state-Configured { color: #a60; } .state-Enabled { color: #080; font-weight: bold; }
.state-Failed { color: #c00; font-weight: bold; } .down, .warn { color: #c00; } .up { color: #080; }
.muted { color: #777; } .help { color: #555; font-size: 0.9em; }
button { margin-right: 0.4em; } #result { margin-left: 0.6em; }
</style>
)";

std::string page_head(const std::string& title, bool refresh) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // The executive status page is watched while a run goes on; its numbers should move without a click.
  if (refresh) html += "<meta http-equiv=\"refresh\" content=\"2\">\n";
  html += "<title>" + html_escape(title) + "</title>\n";
  html += kStyle;
  html += "</head>\n<body>\n";
  return html;
}

constexpr const char* kPageEnd = "</body>\n</html>\n";

// Whole numbers as such (counters are); others with a few significant digits.
std::string display_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : (value > 0 ? "+Inf" : "-Inf");
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

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
  return "<td class=\"state-" + name + "\">" + name + "</td>";
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

std::string metrics_table(const std::vector<Metric>& metrics) {
  if (metrics.empty()) return "<p class=\"muted\">none</p>\n";
  std::string html = "<table>\n<tr><th>Name</th><th>Kind</th><th>Value</th><th>Labels</th><th>Help</th></tr>\n";
  for (const Metric& metric : metrics) {
    html += "<tr>" + cell(metric.name) + cell(metric.kind == Metric::Kind::counter ? "counter" : "gauge") +
            number_cell(metric.value) + cell(labels_text(metric.labels)) + "<td class=\"help\">" +
            html_escape(metric.help) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

std::string applications_section(const std::vector<ApplicationStatus>& applications) {
  std::string html = "<h2>Applications</h2>\n";
  if (applications.empty()) return html + "<p class=\"muted\">none</p>\n";
  html += "<table>\n<tr><th>TID</th><th>Class</th><th>Instance</th><th>Name</th><th>State</th><th>Reason</th></tr>\n";
  for (const ApplicationStatus& application : applications) {
    const std::string tid = std::to_string(application.tid);
    html += "<tr><td><a href=\"/app/" + tid + "\">" + tid + "</a></td>" + cell(application.class_name) +
            number_cell(application.instance) + cell(application.name) + state_cell(application.state) +
            cell(application.reason) + "</tr>\n";
  }
  return html + "</table>\n";
}

std::string pools_section(const std::vector<PoolStatus>& pools) {
  std::string html = "<h2>Pools</h2>\n";
  if (pools.empty()) return html + "<p class=\"muted\">none</p>\n";
  html +=
      "<table>\n<tr><th>Pool</th><th>Allocator</th><th>NUMA node</th><th>Reserved bytes</th><th>Block size</th>"
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
  return html + "</table>\n";
}

std::string transports_section(const std::vector<TransportStatus>& transports) {
  std::string html = "<h2>Transports</h2>\n";
  if (transports.empty()) return html + "<p class=\"muted\">none</p>\n";
  html += "<table>\n<tr><th>Protocol</th><th>Endpoint</th><th>Offers</th><th>Counters</th></tr>\n";
  for (const TransportStatus& transport : transports) {
    html += "<tr>" + cell(transport.protocol) + cell(transport.endpoint) + cell(describe_capabilities(transport.capabilities)) +
            metrics_cell(transport.metrics) + "</tr>\n";
  }
  html += "</table>\n<h2>Connections</h2>\n";
  std::string rows;
  for (const TransportStatus& transport : transports) {
    for (const ConnectionInfo& connection : transport.connections) {
      rows += "<tr>" + cell(transport.protocol) + cell(connection.remote) + number_cell(connection.peer) +
              (connection.up ? "<td class=\"up\">up</td>" : "<td class=\"down\">down</td>") +
              metrics_cell(connection.metrics) + "</tr>\n";
    }
  }
  if (rows.empty()) return html + "<p class=\"muted\">none</p>\n";
  return html + "<table>\n<tr><th>Protocol</th><th>Remote</th><th>Peer</th><th>Link</th><th>Counters</th></tr>\n" +
         rows + "</table>\n";
}

std::string threads_section(const std::vector<ThreadStatus>& threads) {
  std::string html = "<h2>Threads</h2>\n";
  if (threads.empty()) return html + "<p class=\"muted\">none</p>\n";
  html += "<table>\n<tr><th>Name</th><th>Kernel TID</th><th>Wanted cores</th><th>Actual cores</th></tr>\n";
  for (const ThreadStatus& thread : threads) {
    // A pinning the kernel did not honour is worth seeing: it costs throughput silently.
    const bool mismatch = !thread.cores_wanted.empty() && thread.cores_wanted != thread.cores;
    html += "<tr>" + cell(thread.name) + number_cell(thread.kernel_tid) + cell(cores_text(thread.cores_wanted)) +
            (mismatch ? "<td class=\"warn\">" : "<td>") + html_escape(cores_text(thread.cores)) + "</td></tr>\n";
  }
  return html + "</table>\n";
}

// Buttons and the parameter form post to the JSON API and show its answer; the page reloads on success. When changes
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
    if (response.ok) setTimeout(() => location.reload(), 700);
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

}  // namespace

std::string html_escape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      case '\'': escaped += "&#39;"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

std::string html_status_page(const ControlModel& model, bool changes_need_token) {
  const std::string partition = model.partition_name();
  const std::string context = model.context_url();
  std::string html = page_head("daqx " + partition + " " + context, true);
  html += "<h1>daqx executive: " + html_escape(partition) + "</h1>\n";
  html += "<p>Context <code>" + html_escape(context) +
          "</code> &middot; <a href=\"/api/applications\">JSON</a> &middot; <a href=\"/metrics\">metrics</a></p>\n";
  if (changes_need_token) html += token_notice(false);
  html += applications_section(model.applications());
  html += pools_section(model.pools());
  html += transports_section(model.transports());
  html += threads_section(model.threads());
  html += "<h2>Executive counters</h2>\n" + metrics_table(model.executive_metrics());
  return html + kPageEnd;
}

std::string html_application_page(const ControlModel& model, const ApplicationStatus& application,
                                  bool changes_need_token) {
  const std::string tid = std::to_string(application.tid);
  const std::string title = application.class_name + " " + std::to_string(application.instance) + " (tid " + tid + ")";
  std::string html = page_head(title, false);
  html += control_script();
  html += "<p><a href=\"/\">&larr; " + html_escape(model.partition_name()) + " " + html_escape(model.context_url()) +
          "</a></p>\n";
  html += "<h1>" + html_escape(application.class_name) + " instance " + std::to_string(application.instance) +
          " <span class=\"muted\">tid " + tid + "</span></h1>\n";
  if (!application.name.empty()) html += "<p><code>" + html_escape(application.name) + "</code></p>\n";
  const std::string state(to_string(application.state));
  html += "<p>State: <span class=\"state-" + state + "\">" + state + "</span>";
  if (!application.reason.empty()) html += " &middot; Reason: " + html_escape(application.reason);
  html += "</p>\n";

  const std::string transition_url = "/api/applications/" + tid + "/transition";
  if (changes_need_token) html += token_notice(true);
  html += "<form onsubmit=\"return false\">";
  for (const char* command : {"configure", "enable", "stop", "halt"}) {
    html += "<button type=\"button\" onclick=\"post('" + transition_url + "', {command: '" + command + "'})\">" +
            command + "</button>";
  }
  html += "<span id=\"result\"></span></form>\n";

  html += "<h2>Parameters</h2>\n";
  if (application.params.empty()) {
    html += "<p class=\"muted\">none</p>\n";
  } else {
    html += "<table>\n<tr><th>Name</th><th>Type</th><th>Value</th><th>Default</th><th>Unit</th><th>Help</th></tr>\n";
    for (const ParamView& param : application.params) {
      html += "<tr>" + cell(param.name) + cell(param.type) + cell(param.value) + cell(param.default_value) +
              cell(param.unit) + "<td class=\"help\">" + html_escape(param.help) + "</td></tr>\n";
    }
    html += "</table>\n";
    html += "<form onsubmit=\"post('/api/applications/" + tid +
            "/parameters', {name: document.getElementById('param-name').value, "
            "value: document.getElementById('param-value').value}); return false\">\n<select id=\"param-name\">";
    for (const ParamView& param : application.params) {
      html += "<option value=\"" + html_escape(param.name) + "\">" + html_escape(param.name) + "</option>";
    }
    html += "</select> <input id=\"param-value\" size=\"30\"> <button type=\"submit\">set</button>"
            " <span class=\"muted\">(while Halted)</span></form>\n";
  }
  html += "<h2>Metrics</h2>\n" + metrics_table(application.metrics);
  return html + kPageEnd;
}

std::string html_error_page(int status, const std::string& reason) {
  std::string html = page_head("daqx: " + std::to_string(status), false);
  html += "<h1>" + std::to_string(status) + "</h1>\n<p>" + html_escape(reason) + "</p>\n<p><a href=\"/\">status page</a></p>\n";
  return html + kPageEnd;
}

}  // namespace daqx::http
