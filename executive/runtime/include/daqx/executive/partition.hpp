// The partition description as read from XML: contexts (executives), their endpoints, modules and
// applications, and the policy that pins threads and binds pools. docs/configuration.md is its reference.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "daqx/api/parameters.hpp"

namespace daqx::config {

struct SourceLocation {
  std::string file;
  int line = 0;
  std::string text() const { return file + ":" + std::to_string(line); }
};

struct Property {  // <Properties><name type="unsigned">value</name></Properties>
  std::string name;
  std::optional<ParamType> type;  // when the partition states it; must match the declaration
  std::string value;
  SourceLocation where;
};

// The properties as name and value, for ParamSet::set_together (they take effect together, checks included).
std::vector<std::pair<std::string, std::string>> assignments(const std::vector<Property>& properties);

struct EndpointConfig {
  std::string protocol;  // tcp, ofi, ibv
  std::string hostname;
  std::uint16_t port = 0;
  std::string network;
  std::vector<Property> properties;  // transport parameters
  SourceLocation where;
};

struct ModuleConfig {
  std::string path;  // absolute, or relative to the partition file, or a bare name searched in the module path
  SourceLocation where;
};

struct ApplicationConfig {
  std::string class_name;
  std::uint32_t id = 0;  // the TID, unique in the partition, > 0
  std::uint32_t instance = 0;
  std::string network;   // the network it sends and receives on (empty: local only)
  std::vector<Property> properties;
  SourceLocation where;
};

struct ContextConfig {
  std::string url;  // http://host:port or https://host:port: the executive's identity and control address
  std::string host;
  std::uint16_t port = 0;
  bool tls = false;  // https://: the control port speaks TLS
  std::vector<EndpointConfig> endpoints;
  std::vector<ModuleConfig> modules;
  std::vector<ApplicationConfig> applications;
  SourceLocation where;
};

struct PolicyRule {  // first matching rule wins, in file order
  enum class Kind { thread, pool };
  Kind kind = Kind::thread;
  std::string pattern;        // glob over hierarchical names, e.g. "pt/tcp/*", "evb/ru/*/pool"
  std::vector<int> cores;     // thread: CPUs to pin to ("0", "1-3", "0,2")
  std::string allocator;      // pool: "heap", "hugepage", "numa:<node>", "shm", "shm:hugepage", "shm:numa:<node>"
  std::string context;        // optional: applies only in the context with this URL
  SourceLocation where;
};

// <Launch><Host>: how daqx-launch reaches and runs the contexts on the hosts matching `pattern` (a glob over
// the host of the context URL); the first matching rule wins, in file order. Unset fields keep the defaults.
struct LaunchHostRule {
  std::string pattern;
  std::string ssh_target;  // ssh: what to connect to ("user@node01"); default: the host itself
  std::string prefix;      // install prefix there: the executive is PREFIX/bin/daqx-executive
  std::string executive;   // or the executive's full path there (wins over prefix)
  std::string work_dir;    // ssh: where the partition is copied; default /tmp/daqx-<user>
  std::vector<std::pair<std::string, std::string>> environment;  // <Env name value/>: set for the executive
  SourceLocation where;
};

// <Launch><Restart>: what daqx-launch does when a context whose URL matches `pattern` (glob) ends without
// having been asked to; the first matching rule wins, in file order. Without one: never.
struct LaunchRestartRule {
  enum class Policy { never, on_failure };
  std::string pattern;
  Policy policy = Policy::never;
  unsigned max_restarts = 5;     // restarts of one context over the whole launch
  double backoff_seconds = 1;    // before the first restart; doubled for each further one
  double max_backoff_seconds = 30;
  SourceLocation where;
};

// <Launch><Expendable>: how many applications of a class the run may lose (their contexts dead for good, or
// dropped by the application that watches them, e.g. the EvM's BUs) and still go on; one more fails it. Given as
// `max` (that many may be lost) or `min` (that many must remain); one rule per class.
struct LaunchExpendableRule {
  std::string class_name;
  std::optional<std::uint32_t> max_lost;  // as written: max="N"
  std::optional<std::uint32_t> min_left;  // as written: min="N"
  std::uint32_t losses_allowed = 0;       // either one, against the class's applications in the partition
  SourceLocation where;
};

struct LaunchConfig {  // <Launch engine="..."> (optional): read by daqx-launch; <Expendable> by the executives too
  std::string engine;  // local, ssh or slurm; empty: local unless the command line says otherwise
  std::vector<LaunchHostRule> hosts;
  std::vector<LaunchRestartRule> restarts;
  std::vector<LaunchExpendableRule> expendables;
  SourceLocation where;

  const LaunchHostRule* host_rule(std::string_view host) const noexcept;        // null: defaults
  const LaunchRestartRule* restart_rule(std::string_view url) const noexcept;  // null: never restart
  // null: no application of the class may be lost without failing the run.
  const LaunchExpendableRule* expendable_rule(std::string_view class_name) const noexcept;
};

// <Control>: who may command the executives' control ports, and how they are reached. Paths are resolved
// against the partition file's folder when read. docs/control-api.md says what each one does.
struct ControlConfig {
  enum class Reads { open, token };
  enum class Bind { context, any };
  bool present = false;    // false: no <Control>, every field has its default (open, plain HTTP, bound to the context)
  std::string token_file;  // the bearer token that changes (and reads with Reads::token) need; empty: none
  Reads reads = Reads::open;
  bool tls = false;         // every context URL is then https://
  std::string certificate;  // server: PEM certificate (chain) presented by every executive
  std::string key;          // server: PEM private key of that certificate
  std::string ca;           // clients: PEM CA the executives' certificates must chain to; empty: the system's CAs
  Bind bind = Bind::context;  // context: listen on the context URL's host address only; any: on every interface
  SourceLocation where;
};

struct Partition {
  std::string name;
  std::string file;  // as given
  std::vector<ContextConfig> contexts;
  std::vector<PolicyRule> policy;
  LaunchConfig launch;
  ControlConfig control;
  SourceLocation where;

  const ContextConfig* find_context(std::string_view url) const noexcept;
  // The context holding an application, and the application, by TID.
  const ContextConfig* context_of(std::uint32_t tid) const noexcept;
  const ApplicationConfig* application(std::uint32_t tid) const noexcept;
};

// Every mistake found, each "file:line: reason", in file order. what() joins them with newlines.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<std::string> messages);
  const std::vector<std::string>& messages() const noexcept { return messages_; }

 private:
  std::vector<std::string> messages_;
};

// Reads and checks a partition file: well-formed XML, known elements and attributes, required attributes,
// numbers and ports, duplicate ids/URLs/endpoints/class+instance, networks served by an endpoint of the
// context, policy rules; load_partition also the sockets by address (check_same_sockets). Throws ConfigError
// with every mistake found.
Partition load_partition(const std::string& path);
Partition parse_partition(std::string_view xml, const std::string& file_name);

// Of a partition read whole (load_partition runs it): no two contexts or endpoints are the same socket once their
// host names are resolved (a name and its address, localhost and 127.0.0.1), and a wildcard host (0.0.0.0, ::)
// shares its port with no other socket of its context's machine. A name that does not resolve here is compared as
// written. Returns the messages ("file:line: reason", naming both), empty when all is well.
std::vector<std::string> check_same_sockets(const Partition& partition);

// What the loaded modules provide, for the second round of checks (classes, protocols, parameters).
class Catalogue {
 public:
  virtual ~Catalogue() = default;
  virtual const std::vector<ParamSpec>* application_params(std::string_view class_name) const = 0;  // null: unknown
  virtual const std::vector<ParamSpec>* transport_params(std::string_view protocol) const = 0;      // null: unknown
  // What is known, so that a message about an unknown class or protocol can list the alternatives;
  // empty when the catalogue cannot tell (the message then lists nothing).
  virtual std::vector<std::string> application_classes() const { return {}; }
  virtual std::vector<std::string> transport_protocols() const { return {}; }
};

// Second round, once the modules of a context are loaded: unknown application classes and protocols,
// unknown or badly typed properties, and `applications` selectors that pick an application with which no
// network is shared. Returns the messages (empty when all is well); only the given context is checked.
std::vector<std::string> check_against_catalogue(const Partition& partition, const ContextConfig& context,
                                                 const Catalogue& catalogue);

// Resolves an `applications` selector ("class:NAME" or "3,4,5" or "*") to TIDs, in partition order.
// Returns the reason in `error` for an unknown id or class.
std::vector<std::uint32_t> resolve_selector(const Partition& partition, std::string_view selector, std::string& error);

// Whether `from` can send to `to`: same context, or same network and `to`'s context has an endpoint on it.
bool shares_network(const Partition& partition, std::uint32_t from, std::uint32_t to);
// The same for applications already found, with the contexts that hold them (no search of the partition).
bool shares_network(const ContextConfig& from_context, const ApplicationConfig& source, const ContextConfig& to_context,
                    const ApplicationConfig& target);

}  // namespace daqx::config
