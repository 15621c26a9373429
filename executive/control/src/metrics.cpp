// /metrics: the model's counters in the Prometheus text exposition format 0.0.4, one family per metric name.
#include <charconv>
#include <cmath>
#include <set>
#include <string_view>
#include <unordered_map>

#include "control_routes.hpp"
#include "daqx/services/text.hpp"

namespace daqx::http {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Metric names: [a-zA-Z0-9_], the daqx_ prefix keeps a digit from coming first.
std::string sanitize_name(std::string_view name) {
  std::string sanitized;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    sanitized += keep ? c : '_';
  }
  return sanitized.empty() ? "unnamed" : sanitized;
}

// Label names: as metric names, but not starting with a digit, and "__" is reserved to Prometheus.
std::string sanitize_label_name(std::string_view name) {
  std::string sanitized = sanitize_name(name);
  std::string prefix;
  if (sanitized[0] >= '0' && sanitized[0] <= '9') prefix = "_";
  if (sanitized.starts_with("__")) prefix = "label";
  return prefix.empty() ? sanitized : prefix.append(sanitized);
}

// Prometheus wants UTF-8: a stray byte from an application's label would make the whole scrape fail.
std::string escape_label_value(std::string_view raw) {
  const std::string value = strings::valid_utf8(raw);
  std::string escaped;
  for (char c : value) {
    if (c == '\\') escaped += "\\\\";
    else if (c == '"') escaped += "\\\"";
    else if (c == '\n') escaped += "\\n";
    else escaped += c;
  }
  return escaped;
}

std::string escape_help(std::string_view raw) {
  const std::string help = strings::valid_utf8(raw);
  std::string escaped;
  for (char c : help) {
    if (c == '\\') escaped += "\\\\";
    else if (c == '\n') escaped += "\\n";
    else escaped += c;
  }
  return escaped;
}

// Shortest text that reads back as the same double; Prometheus spells the non-finite ones +Inf, -Inf, NaN.
std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  if (error != std::errc()) return "NaN";
  return std::string(text, end);
}

const char* type_name(Metric::Kind kind) {
  switch (kind) {
    case Metric::Kind::counter: return "counter";
    case Metric::Kind::histogram: return "histogram";
    case Metric::Kind::state_set: return "gauge";  // the text format has no stateset type: a gauge per state
    case Metric::Kind::gauge: break;
  }
  return "gauge";
}

// Collects samples by family first, because the format wants each family's samples together under one HELP and
// TYPE while the model hands them out per owner (application, pool, connection).
class Exposition {
 public:
  void add(const std::string& name, Metric::Kind kind, const std::string& help, const Labels& labels, double value) {
    add_sample(family(name, kind, help), name, labels, value);
  }

  // name_bucket{le=...}, name_sum and name_count under one family `name`.
  void add_histogram(const std::string& name, const std::string& help, const Labels& labels,
                     const HistogramSnapshot& histogram) {
    Family& family = this->family(name, Metric::Kind::histogram, help);
    for (std::size_t i = 0; i < histogram.upper_bounds.size() && i < histogram.cumulative.size(); ++i) {
      Labels bucket = labels;
      bucket.emplace_back("le", format_value(histogram.upper_bounds[i]));
      add_sample(family, name + "_bucket", bucket, static_cast<double>(histogram.cumulative[i]));
    }
    Labels infinite = labels;
    infinite.emplace_back("le", "+Inf");
    add_sample(family, name + "_bucket", infinite, static_cast<double>(histogram.count));
    add_sample(family, name + "_sum", labels, histogram.sum);
    add_sample(family, name + "_count", labels, static_cast<double>(histogram.count));
  }

  // One series per state, labelled `label`, 1 for the current one: a query need not know the states' codes,
  // and a state left shows as a 0 instead of a series that vanishes.
  void add_state_set(const std::string& name, const std::string& help, const Labels& labels, const std::string& label,
                     const std::vector<std::string>& states, std::size_t current) {
    Family& family = this->family(name, Metric::Kind::state_set, help);
    for (std::size_t i = 0; i < states.size(); ++i) {
      Labels state = labels;
      state.emplace_back(label, states[i]);
      add_sample(family, name, state, i == current ? 1 : 0);
    }
  }

  std::string text() const {
    std::string text;
    for (const Family& family : families_) {
      text += "# HELP " + family.name + " " + escape_help(family.help.empty() ? family.name : family.help) + "\n";
      text += "# TYPE " + family.name + " " + type_name(family.kind) + "\n";
      text += family.samples;
    }
    return text;
  }

 private:
  struct Family {
    std::string name;
    Metric::Kind kind;
    std::string help;
    std::string samples;
    std::set<std::string> series;
  };

  Family& family(const std::string& name, Metric::Kind kind, const std::string& help) {
    auto [found, inserted] = index_.try_emplace(name, families_.size());
    if (inserted) families_.push_back({name, kind, help, {}, {}});
    Family& family = families_[found->second];
    if (family.help.empty()) family.help = help;
    return family;
  }

  static void add_sample(Family& family, const std::string& series_name, const Labels& labels, double value) {
    std::string label_text;
    std::set<std::string> label_names;
    for (const auto& [label, label_value] : labels) {
      std::string label_name = sanitize_label_name(label);
      // A metric's own label may not redefine the owner's labels (tid, pool, ...): duplicates are invalid.
      if (!label_names.insert(label_name).second) continue;
      label_text += (label_text.empty() ? "" : ",") + label_name + "=\"" + escape_label_value(label_value) + "\"";
    }
    std::string series = series_name;
    if (!label_text.empty()) series += "{" + label_text + "}";
    // Two identical series would make the whole scrape invalid; the first one wins.
    if (!family.series.insert(series).second) return;
    family.samples += series + " " + format_value(value) + "\n";
  }

  std::vector<Family> families_;
  std::unordered_map<std::string, std::size_t> index_;
};

// "daqx_<owner>_<name>", with _total on counters as Prometheus naming asks.
std::string family_name(std::string_view owner, const Metric& metric) {
  std::string name = "daqx_" + std::string(owner) + "_" + sanitize_name(metric.name);
  if (metric.kind == Metric::Kind::counter && !name.ends_with("_total")) name += "_total";
  return name;
}

void add_metrics(Exposition& exposition, std::string_view owner, const std::vector<Metric>& metrics,
                 const Labels& owner_labels) {
  for (const Metric& metric : metrics) {
    if (metric.audience != Metric::Audience::everyone) continue;  // rates, settings, medians: JSON only
    Labels labels = owner_labels;
    labels.insert(labels.end(), metric.labels.begin(), metric.labels.end());
    const std::string name = family_name(owner, metric);
    switch (metric.kind) {
      case Metric::Kind::histogram: exposition.add_histogram(name, metric.help, labels, metric.histogram); break;
      case Metric::Kind::state_set:
        exposition.add_state_set(name, metric.help, labels, "state", metric.states,
                                 static_cast<std::size_t>(metric.value));
        break;
      default: exposition.add(name, metric.kind, metric.help, labels, metric.value); break;
    }
  }
}

void add_applications(Exposition& exposition, const std::vector<ApplicationStatus>& applications) {
  static const std::vector<std::string> states = [] {
    std::vector<std::string> names;
    for (State state : {State::halted, State::configured, State::enabled, State::failed})
      names.emplace_back(to_string(state));
    return names;
  }();
  for (const ApplicationStatus& application : applications) {
    // Not "instance": Prometheus gives every series its target's instance label, and would rename ours.
    const Labels labels = {{"tid", std::to_string(application.tid)},
                           {"class", application.class_name},
                           {"application_instance", std::to_string(application.instance)}};
    exposition.add_state_set("daqx_application_state",
                             "1 for the state the application is in, 0 for the others (Halted, Configured, Enabled, "
                             "Failed)",
                             labels, "state", states, static_cast<std::size_t>(application.state));
    add_metrics(exposition, "application", application.metrics, labels);
  }
}

void add_pools(Exposition& exposition, const std::vector<PoolStatus>& pools) {
  using Kind = Metric::Kind;
  for (const PoolStatus& pool : pools) {
    exposition.add("daqx_pool_info", Kind::gauge, "1 for each pool, labelled with its allocator and NUMA node",
                   {{"pool", pool.stats.name},
                    {"allocator", pool.stats.allocator},
                    {"numa_node", std::to_string(pool.numa_node)}},
                   1);
    exposition.add("daqx_pool_reserved_bytes", Kind::gauge, "Bytes held in the pool's chunks",
                   {{"pool", pool.stats.name}}, static_cast<double>(pool.stats.bytes_reserved));
  }
  struct ClassMetric {
    const char* name;
    Kind kind;
    const char* help;
    double (*value)(const mem::SizeClassStats&);
  };
  static const ClassMetric class_metrics[] = {
      {"daqx_pool_blocks", Kind::gauge, "Blocks carved from the chunks made so far (used and free)",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.blocks_total); }},
      {"daqx_pool_blocks_used", Kind::gauge, "Blocks in use",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.blocks_used); }},
      {"daqx_pool_blocks_free", Kind::gauge, "Blocks free",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.blocks_free); }},
      {"daqx_pool_blocks_high_water", Kind::gauge, "Most blocks in use at once",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.high_water); }},
      {"daqx_pool_chunks", Kind::gauge, "Chunks allocated",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.chunks); }},
      {"daqx_pool_failed_allocations_total", Kind::counter, "Allocations refused because the pool was exhausted",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.failed_allocations); }},
      {"daqx_pool_double_releases_total", Kind::counter, "Blocks released twice (a bug in their user)",
       [](const mem::SizeClassStats& s) { return static_cast<double>(s.double_releases); }},
  };
  for (const PoolStatus& pool : pools) {
    for (const mem::SizeClassStats& size_class : pool.stats.classes) {
      const Labels labels = {{"pool", pool.stats.name}, {"block_size", std::to_string(size_class.block_size)}};
      for (const ClassMetric& class_metric : class_metrics) {
        exposition.add(class_metric.name, class_metric.kind, class_metric.help, labels, class_metric.value(size_class));
      }
    }
  }
}

void add_transports(Exposition& exposition, const std::vector<TransportStatus>& transports) {
  for (const TransportStatus& transport : transports) {
    add_metrics(exposition, "transport", transport.metrics,
                {{"protocol", transport.protocol}, {"endpoint", transport.endpoint}});
  }
  for (const TransportStatus& transport : transports) {
    for (const ConnectionInfo& connection : transport.connections) {
      // A connection is exported by the side that opened it, labelled by what it connected to: the same series
      // across reconnects. The accepting side knows only an ephemeral address; its frames are in the totals.
      if (!connection.outgoing || connection.peer_endpoint.empty()) continue;
      const Labels labels = {{"protocol", transport.protocol},
                             {"endpoint", transport.endpoint},
                             {"peer_endpoint", connection.peer_endpoint},
                             {"peer_context", connection.peer_context}};
      exposition.add("daqx_transport_connection_up", Metric::Kind::gauge, "1 while the connection is up, else 0",
                     labels, connection.up ? 1 : 0);
      add_metrics(exposition, "transport_connection", connection.metrics, labels);
    }
  }
}

#if defined(__clang__)
constexpr const char* kCompiler = "clang " __clang_version__;
#elif defined(__GNUC__)
constexpr const char* kCompiler = "gcc " __VERSION__;
#else
constexpr const char* kCompiler = "unknown";
#endif

void add_build_info(Exposition& exposition) {
  exposition.add("daqx_build_info", Metric::Kind::gauge,
                 "1, labelled with the version, compiler and build type of this executive",
                 {{"version", DAQX_BUILD_VERSION}, {"compiler", kCompiler}, {"build_type", DAQX_BUILD_TYPE}}, 1);
}

}  // namespace

std::string prometheus_metrics(const ControlModel& model, const std::vector<Metric>& control) {
  Exposition exposition;
  add_build_info(exposition);
  add_applications(exposition, model.applications());
  add_pools(exposition, model.pools());
  add_transports(exposition, model.transports());
  add_metrics(exposition, "executive", model.executive_metrics(), {});
  // A gauge, not a label: a label would start new series every run and leave the old ones behind.
  exposition.add("daqx_run_number", Metric::Kind::gauge,
                 "the run this executive's applications are enabled in; 0 when none is on", {},
                 static_cast<double>(model.run_number()));
  add_metrics(exposition, "control", control, {});
  return exposition.text();
}

}  // namespace daqx::http
