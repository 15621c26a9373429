// The module listing of `daqx-executive --list-params`, in text and in JSON (written with Poco::JSON).
#include "daqx/control/module_listing.hpp"

#include <cstdint>
#include <sstream>

#include <Poco/Dynamic/Var.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include "daqx/api/module.hpp"

namespace daqx {
namespace {

using Poco::JSON::Array;
using Poco::JSON::Object;

Object::Ptr new_object() { return new Object(Poco::JSON_PRESERVE_KEY_ORDER); }

// A bound as a JSON number of the parameter's own type: 4096, not 4096.0, for an unsigned.
Poco::Dynamic::Var bound_value(const ParamSpec& spec, const std::optional<double>& bound) {
  if (!bound) return Poco::Dynamic::Var();
  if (spec.type == ParamType::unsigned_integer && *bound >= 0 && *bound < 1.8e19)
    return static_cast<std::uint64_t>(*bound);
  if (spec.type == ParamType::integer && *bound > -9.2e18 && *bound < 9.2e18) return static_cast<std::int64_t>(*bound);
  return *bound;
}

Array::Ptr parameters_json(const std::vector<ParamSpec>& params) {
  Array::Ptr array = new Array;
  for (const ParamSpec& p : params) {
    Object::Ptr object = new_object();
    object->set("name", p.name);
    object->set("type", std::string(to_string(p.type)));
    object->set("default", p.default_value);
    object->set("unit", p.unit);
    object->set("min", bound_value(p, p.min));
    object->set("max", bound_value(p, p.max));
    Array::Ptr allowed = new Array;
    for (const std::string& word : p.allowed) allowed->add(word);
    object->set("allowed", allowed);
    object->set("help", p.help);
    array->add(object);
  }
  return array;
}

// An application class or a transport: its name under `key`, its help and its parameters.
Object::Ptr class_json(const char* key, const std::string& name, const std::string& help,
                       const std::vector<ParamSpec>& params) {
  Object::Ptr object = new_object();
  object->set(key, name);
  object->set("help", help);
  object->set("parameters", parameters_json(params));
  return object;
}

std::string allowed_text(const ParamSpec& p) {
  std::string words;
  for (std::size_t i = 0; i < p.allowed.size(); ++i) {
    if (i > 0) words.append(i + 1 == p.allowed.size() ? " or " : ", ");
    words.append(p.allowed[i]);
  }
  return words;
}

void append_table(std::string& out, const std::string& title, const std::string& help,
                  const std::vector<ParamSpec>& params) {
  out.append("\n").append(title);
  if (!help.empty()) out.append(" - ").append(help);
  out.append("\n");
  for (const ParamSpec& p : params) {
    out.append("  ").append(p.name).append(" (").append(to_string(p.type)).append(", default '");
    out.append(p.default_value).append("'");
    if (!p.unit.empty()) out.append(", ").append(p.unit);
    if (p.min) out.append(", min ").append(param_bound_text(p, *p.min));
    if (p.max) out.append(", max ").append(param_bound_text(p, *p.max));
    if (!p.allowed.empty()) out.append(", one of ").append(allowed_text(p));
    out.append(")\n      ").append(p.help).append("\n");
  }
  if (params.empty()) out.append("  (no parameters)\n");
}

}  // namespace

std::string module_listing_text(const ModuleListing& listing) {
  std::string out;
  for (std::size_t m = 0; m < listing.modules.size(); ++m) {
    const ModuleDescriptor& d = *listing.modules[m].descriptor;
    if (m > 0) out.append("\n");
    out.append("module ").append(d.name).append(" (").append(listing.modules[m].path).append(")\n");
    for (const ApplicationClass& c : d.applications) append_table(out, "application " + c.name, c.help, c.params);
    for (const TransportClass& t : d.transports) {
      append_table(out, "transport " + t.protocol, t.help, t.params);
      if (t.capabilities)
        out.append("  offers, with these defaults: ")
            .append(describe_capabilities(t.capabilities(ParamSet(t.params))))
            .append("\n");
    }
  }
  append_table(out, "every application (added by the executive)", "", listing.application_params);
  return out;
}

std::string module_listing_json(const ModuleListing& listing) {
  Array::Ptr modules = new Array;
  for (const ModuleListing::Module& listed : listing.modules) {
    const ModuleDescriptor& d = *listed.descriptor;
    Object::Ptr module = new_object();
    module->set("name", d.name);
    module->set("path", listed.path);
    Array::Ptr applications = new Array;
    for (const ApplicationClass& c : d.applications) applications->add(class_json("class", c.name, c.help, c.params));
    module->set("applications", applications);
    Array::Ptr transports = new Array;
    for (const TransportClass& t : d.transports) {
      Object::Ptr transport = class_json("protocol", t.protocol, t.help, t.params);
      if (t.capabilities) {
        // The control API's shape for capabilities, so a tool reads both alike.
        const std::string described = transport_capabilities_json({{t.protocol, t.capabilities(ParamSet(t.params))}});
        Poco::JSON::Parser parser;
        const Array::Ptr list = parser.parse(described).extract<Array::Ptr>();
        transport->set("capabilities", list->getObject(0)->get("capabilities"));
      } else {
        transport->set("capabilities", Poco::Dynamic::Var());
      }
      transports->add(transport);
    }
    module->set("transports", transports);
    modules->add(module);
  }
  Object::Ptr document = new_object();
  document->set("modules", modules);
  document->set("applicationParameters", parameters_json(listing.application_params));
  std::ostringstream out;
  document->stringify(out, 2);
  out << '\n';
  return out.str();
}

}  // namespace daqx
