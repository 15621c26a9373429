// Loads daqx modules (.so) with dlopen and answers what classes and transports they provide.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "daqx/api/module.hpp"
#include "daqx/executive/partition.hpp"

namespace daqx::detail {

// Parameters the executive adds to every application class, whatever its module declares.
std::vector<ParamSpec> executive_application_params();

class ModuleRegistry final : public config::Catalogue {
 public:
  // Loads one module; returns "" or the reason (file not found with the places searched, dlerror's text,
  // no entry point, ABI mismatch). `partition_dir` anchors relative paths.
  std::string load(const std::string& spec, const std::string& partition_dir);

  const ApplicationClass* application_class(std::string_view name) const noexcept;
  const TransportClass* transport_class(std::string_view protocol) const noexcept;
  const std::vector<ParamSpec>* application_params(std::string_view class_name) const override;
  const std::vector<ParamSpec>* transport_params(std::string_view protocol) const override;
  std::vector<std::string> application_classes() const override;
  std::vector<std::string> transport_protocols() const override;

  const std::vector<const ModuleDescriptor*>& modules() const noexcept { return modules_; }
  const std::vector<std::string>& paths() const noexcept { return paths_; }

  // Where a bare module name is looked for: $DAQX_MODULE_PATH (colon-separated), the module folder of the
  // install the running program belongs to (its bin/../lib/daqx), then, for a program of the build tree only,
  // the build tree's module folder.
  static std::vector<std::string> search_path();

 private:
  std::vector<const ModuleDescriptor*> modules_;
  // Each class's declared parameters followed by the executive's own (transportMode, ...).
  std::map<std::string, std::vector<ParamSpec>, std::less<>> application_params_;
  std::vector<std::string> paths_;
};

}  // namespace daqx::detail
