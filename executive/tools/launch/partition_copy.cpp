#include "partition_copy.hpp"

#include <pugixml.hpp>

#include <filesystem>
#include <sstream>

#include "engine.hpp"

namespace daqx::launch {

std::string partition_for_hosts(const std::string& path) {
  pugi::xml_document document;
  const pugi::xml_parse_result parsed = document.load_file(path.c_str(), pugi::parse_default | pugi::parse_comments);
  if (!parsed) throw LaunchError("cannot read " + path + ": " + parsed.description());
  const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  const auto make_absolute = [&](pugi::xml_attribute attribute) {
    const std::string value = attribute.value();
    if (!value.empty() && value[0] != '/') attribute.set_value((folder / value).lexically_normal().c_str());
  };
  // A bare module name is looked up in the module path on the host, as it would be here: left as it is.
  for (pugi::xpath_node module : document.select_nodes("//Module[@path]")) {
    const pugi::xml_attribute attribute = module.node().attribute("path");
    if (std::string(attribute.value()).find('/') != std::string::npos) make_absolute(attribute);
  }
  for (pugi::xpath_node control : document.select_nodes("/Partition/Control"))
    for (const char* name : {"tokenFile", "certificate", "key", "ca"})
      if (pugi::xml_attribute attribute = control.node().attribute(name)) make_absolute(attribute);
  std::ostringstream text;
  document.save(text, "  ");
  return text.str();
}

}  // namespace daqx::launch
