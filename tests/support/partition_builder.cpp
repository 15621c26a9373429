// Writes the partition a test builds with pugixml, which escapes every name and value.
#include "partition_builder.hpp"

#include <sstream>
#include <stdexcept>

namespace daqx::test {
namespace {

void set_if_given(pugi::xml_node element, const char* name, const std::string& value) {
  if (!value.empty()) element.append_attribute(name).set_value(value.c_str());
}

pugi::xml_node child_once(pugi::xml_node parent, const char* name) {
  const pugi::xml_node found = parent.child(name);
  return found ? found : parent.append_child(name);
}

// <Thread pattern cores [context]/> or <Pool pattern allocator [context]/>.
void add_rule(pugi::xml_node policy, const char* kind, const std::string& pattern, const char* what,
              const std::string& value, const std::string& context) {
  pugi::xml_node rule = policy.append_child(kind);
  rule.append_attribute("pattern").set_value(pattern.c_str());
  rule.append_attribute(what).set_value(value.c_str());
  set_if_given(rule, "context", context);
}

}  // namespace

PropertiesBuilder& PropertiesBuilder::property(const std::string& name, const std::string& value,
                                               const std::string& type) {
  if (!properties_) properties_ = child_once(owner_, "Properties");
  pugi::xml_node element = properties_.append_child(name.c_str());
  set_if_given(element, "type", type);
  element.text().set(value.c_str());
  return *this;
}

PropertiesBuilder& PropertiesBuilder::properties(const PartitionProperties& properties) {
  for (const PartitionProperty& p : properties) property(p.name, p.value, p.type);
  return *this;
}

PropertiesBuilder ContextBuilder::endpoint(const std::string& protocol, const std::string& hostname,
                                           std::uint16_t port, const std::string& network) {
  pugi::xml_node endpoint = context_.append_child("Endpoint");
  endpoint.append_attribute("protocol").set_value(protocol.c_str());
  endpoint.append_attribute("hostname").set_value(hostname.c_str());
  endpoint.append_attribute("port").set_value(static_cast<unsigned>(port));
  set_if_given(endpoint, "network", network);
  return PropertiesBuilder(endpoint);
}

ContextBuilder& ContextBuilder::module(const std::string& path) {
  context_.append_child("Module").append_attribute("path").set_value(path.c_str());
  return *this;
}

PropertiesBuilder ContextBuilder::application(const std::string& class_name, std::uint32_t id,
                                              std::optional<std::uint32_t> instance, const std::string& network) {
  pugi::xml_node application = context_.append_child("Application");
  application.append_attribute("class").set_value(class_name.c_str());
  application.append_attribute("id").set_value(id);
  if (instance) application.append_attribute("instance").set_value(*instance);
  set_if_given(application, "network", network);
  return PropertiesBuilder(application);
}

PartitionBuilder::PartitionBuilder(const std::string& name) : document_(std::make_unique<pugi::xml_document>()) {
  partition_ = document_->append_child("Partition");
  partition_.append_attribute("name").set_value(name.c_str());
}

PartitionBuilder PartitionBuilder::extending(const std::string& xml) {
  PartitionBuilder builder;
  const pugi::xml_parse_result parsed = builder.document_->load_string(xml.c_str());
  builder.partition_ = builder.document_->child("Partition");
  if (!parsed || !builder.partition_)
    throw std::runtime_error(std::string("not a partition: ") + (parsed ? "no <Partition>" : parsed.description()));
  return builder;
}

ContextBuilder PartitionBuilder::context(const std::string& url) {
  pugi::xml_node context = partition_.append_child("Context");
  context.append_attribute("url").set_value(url.c_str());
  return ContextBuilder(context);
}

PartitionBuilder& PartitionBuilder::control(const ControlSettings& settings) {
  pugi::xml_node control = child_once(partition_, "Control");
  set_if_given(control, "tokenFile", settings.token_file);
  set_if_given(control, "reads", settings.reads);
  set_if_given(control, "tls", settings.tls);
  set_if_given(control, "certificate", settings.certificate);
  set_if_given(control, "key", settings.key);
  set_if_given(control, "ca", settings.ca);
  set_if_given(control, "bind", settings.bind);
  return *this;
}

pugi::xml_node PartitionBuilder::policy() { return child_once(partition_, "Policy"); }

pugi::xml_node PartitionBuilder::launch() { return child_once(partition_, "Launch"); }

PartitionBuilder& PartitionBuilder::thread_rule(const std::string& pattern, const std::string& cores,
                                                const std::string& context) {
  add_rule(policy(), "Thread", pattern, "cores", cores, context);
  return *this;
}

PartitionBuilder& PartitionBuilder::pool_rule(const std::string& pattern, const std::string& allocator,
                                              const std::string& context) {
  add_rule(policy(), "Pool", pattern, "allocator", allocator, context);
  return *this;
}

PartitionBuilder& PartitionBuilder::launch_engine(const std::string& engine) {
  pugi::xml_node element = launch();
  pugi::xml_attribute attribute = element.attribute("engine");
  (attribute ? attribute : element.prepend_attribute("engine")).set_value(engine.c_str());
  return *this;
}

PartitionBuilder& PartitionBuilder::launch_host(const LaunchHostSettings& host) {
  pugi::xml_node rule = launch().append_child("Host");
  rule.append_attribute("pattern").set_value(host.pattern.c_str());
  set_if_given(rule, "sshTarget", host.ssh_target);
  set_if_given(rule, "prefix", host.prefix);
  set_if_given(rule, "executive", host.executive);
  set_if_given(rule, "workDir", host.work_dir);
  for (const auto& [name, value] : host.environment) {
    pugi::xml_node env = rule.append_child("Env");
    env.append_attribute("name").set_value(name.c_str());
    env.append_attribute("value").set_value(value.c_str());
  }
  return *this;
}

PartitionBuilder& PartitionBuilder::launch_restart(const LaunchRestartSettings& restart) {
  pugi::xml_node rule = launch().append_child("Restart");
  rule.append_attribute("pattern").set_value(restart.pattern.c_str());
  rule.append_attribute("policy").set_value(restart.policy.c_str());
  set_if_given(rule, "maxRestarts", restart.max_restarts);
  set_if_given(rule, "backoff", restart.backoff);
  set_if_given(rule, "maxBackoff", restart.max_backoff);
  return *this;
}

PartitionBuilder& PartitionBuilder::launch_expendable(const LaunchExpendableSettings& expendable) {
  pugi::xml_node rule = launch().append_child("Expendable");
  rule.append_attribute("class").set_value(expendable.class_name.c_str());
  set_if_given(rule, "max", expendable.max);
  set_if_given(rule, "min", expendable.min);
  return *this;
}

std::string PartitionBuilder::xml() const {
  std::ostringstream out;
  document_->save(out, "  ", pugi::format_default | pugi::format_no_declaration);
  return out.str();
}

}  // namespace daqx::test
