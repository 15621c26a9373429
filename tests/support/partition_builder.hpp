// Partitions for tests, built in C++ and written as the executive reads them (docs/configuration.md), so that
// a test states what its partition holds instead of splicing XML strings; for valid partitions only.
#pragma once

#include <pugixml.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace daqx::test {

// <Properties><name type="unsigned">value</name></Properties>; an empty type is not written.
struct PartitionProperty {
  std::string name;
  std::string value;
  std::string type;
};
using PartitionProperties = std::vector<PartitionProperty>;

// An element that holds <Properties>: an <Endpoint> (transport parameters) or an <Application>.
class PropertiesBuilder {
 public:
  explicit PropertiesBuilder(pugi::xml_node owner) : owner_(owner) {}
  PropertiesBuilder& property(const std::string& name, const std::string& value, const std::string& type = "");
  PropertiesBuilder& properties(const PartitionProperties& properties);

 private:
  pugi::xml_node owner_;
  pugi::xml_node properties_;  // made with the first property: an empty <Properties/> says nothing
};

class ContextBuilder {
 public:
  explicit ContextBuilder(pugi::xml_node context) : context_(context) {}
  // network empty: none written (the endpoint serves no named network).
  PropertiesBuilder endpoint(const std::string& protocol, const std::string& hostname, std::uint16_t port,
                             const std::string& network = "");
  ContextBuilder& module(const std::string& path);
  // instance and network unset or empty: not written (the format's defaults).
  PropertiesBuilder application(const std::string& class_name, std::uint32_t id,
                                std::optional<std::uint32_t> instance = std::nullopt, const std::string& network = "");

 private:
  pugi::xml_node context_;
};

// <Control>: every field left empty is not written.
struct ControlSettings {
  std::string token_file;
  std::string reads;  // open or token
  std::string tls;    // true or false
  std::string certificate;
  std::string key;
  std::string ca;
  std::string bind;  // context or any
};

// <Launch><Host>: every field but the pattern left empty is not written.
struct LaunchHostSettings {
  std::string pattern;
  std::string ssh_target;
  std::string prefix;
  std::string executive;
  std::string work_dir;
  std::vector<std::pair<std::string, std::string>> environment;  // <Env name value/>
};

// <Launch><Restart>: the optional fields left empty are not written.
struct LaunchRestartSettings {
  std::string pattern;
  std::string policy;  // never or on-failure
  std::string max_restarts;
  std::string backoff;
  std::string max_backoff;
};

// <Launch><Expendable>: one of max and min, the other left empty (not written).
struct LaunchExpendableSettings {
  std::string class_name;
  std::string max;
  std::string min;
};

// Elements appear in the order they are first asked for; a builder of a child stays valid while this one lives.
class PartitionBuilder {
 public:
  explicit PartitionBuilder(const std::string& name);
  // A partition written elsewhere (e.g. by apps/evb/tools/evb_partition.py), to add to; throws std::runtime_error when
  // `xml` holds no <Partition>.
  static PartitionBuilder extending(const std::string& xml);

  ContextBuilder context(const std::string& url);
  PartitionBuilder& control(const ControlSettings& settings);
  PartitionBuilder& thread_rule(const std::string& pattern, const std::string& cores, const std::string& context = "");
  PartitionBuilder& pool_rule(const std::string& pattern, const std::string& allocator, const std::string& context = "");
  PartitionBuilder& launch_engine(const std::string& engine);
  PartitionBuilder& launch_host(const LaunchHostSettings& host);
  PartitionBuilder& launch_restart(const LaunchRestartSettings& restart);
  PartitionBuilder& launch_expendable(const LaunchExpendableSettings& expendable);

  std::string xml() const;

 private:
  pugi::xml_node policy();
  pugi::xml_node launch();

  PartitionBuilder() : document_(std::make_unique<pugi::xml_document>()) {}

  std::unique_ptr<pugi::xml_document> document_;  // held apart, so that the builders of children survive a move
  pugi::xml_node partition_;
};

}  // namespace daqx::test
