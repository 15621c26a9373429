// Partitions for the transport suite, written for the transport of the run.
#include "suite.hpp"

#include <catch2/catch.hpp>

namespace daqx::test {

const TransportProfile& suite_transport() {
  return transport_profile_if_built();
}

std::string application_xml(const std::string& cls, std::uint32_t tid, int instance, const std::string& properties) {
  std::string xml("    <Application class=\"");
  xml.append(cls).append("\" id=\"").append(std::to_string(tid)).append("\" instance=\"").append(std::to_string(instance));
  xml.append("\" network=\"data\"><Properties>").append(properties).append("</Properties></Application>\n");
  return xml;
}

std::string nton_context(const TransportProfile& transport, const Host& host, Traffic traffic,
                         const std::string& applications) {
  std::string xml("  <Context url=\"");
  xml.append(host.url()).append("\">\n    ").append(transport.endpoint_xml(host.data, traffic)).append("\n    ");
  xml.append(transport.module_xml()).append("\n    <Module path=\"libdaqx_nton.so\"/>\n").append(applications);
  return xml.append("  </Context>\n");
}

std::string partition_xml(const std::string& name, const std::vector<std::string>& contexts) {
  std::string xml("<Partition name=\"");
  xml.append(name).append("\">\n");
  for (const std::string& context : contexts) xml.append(context);
  return xml.append("</Partition>\n");
}

NtonContext add_nton_context(PartitionBuilder& partition, const TransportProfile& transport, const Host& host,
                             Traffic traffic) {
  ContextBuilder context = partition.context(host.url());
  PropertiesBuilder endpoint = transport.add_endpoint(context, host.data, traffic);
  context.module(transport.module).module("libdaqx_nton.so");
  return {context, endpoint};
}

void bring_up(const std::vector<ExecutiveProcess*>& executives) {
  for (ExecutiveProcess* e : executives) REQUIRE(e->wait_ready());
  for (ExecutiveProcess* e : executives) REQUIRE(e->transition("configure").status == 200);
  for (ExecutiveProcess* e : executives) REQUIRE(e->transition("enable").status == 200);
}

void stop_and_check_drained(ExecutiveProcess& sender, ExecutiveProcess& receiver, const TransportProfile& transport) {
  for (ExecutiveProcess* e : {&sender, &receiver}) CHECK(e->transition("stop").status == 200);
  CHECK(wait_until([&] {
    return pool_blocks_used(receiver, transport.receive_pool) == receive_blocks_at_rest(receiver, transport);
  }));
  CHECK(wait_until([&] { return pool_blocks_used(receiver, "nton/receiver/0/pool") == 0; }));
  CHECK(wait_until([&] { return pool_blocks_used(sender, "nton/sender/0/pool") == 0; }));
  CHECK(sender.stop() == 0);
  CHECK(receiver.stop() == 0);
}

}  // namespace daqx::test
