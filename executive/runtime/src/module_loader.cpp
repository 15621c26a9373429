// Module loading: path resolution, dlopen, the single entry point, ABI check.
#include "module_loader.hpp"

#include "daqx/services/text.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace daqx::detail {
namespace {

std::string file_kind(std::filesystem::file_type type) {
  using std::filesystem::file_type;
  switch (type) {
    case file_type::directory: return "a directory";
    case file_type::character: return "a character device";
    case file_type::block: return "a block device";
    case file_type::fifo: return "a FIFO";
    case file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

}  // namespace

std::vector<std::string> ModuleRegistry::search_path() {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  // First, so that an operator can put other builds of a module ahead of the installed ones.
  if (const char* env = std::getenv("DAQX_MODULE_PATH")) {
    std::stringstream list(env);
    std::string dir;
    while (std::getline(list, dir, ':'))
      if (!dir.empty()) dirs.push_back(dir);
  }
  // The install this program belongs to, wherever its prefix was moved to: bin/../lib/daqx (as GNUInstallDirs
  // placed them when the build was configured), found from the program's own path, not from the configured prefix.
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (error) return dirs;
  const fs::path program_dir = program.parent_path();
  dirs.push_back((program_dir / DAQX_MODULE_DIR_FROM_BINDIR).lexically_normal().string());
  // A program of the build tree (the executive, a test) uses the modules built beside it; an installed one
  // never looks into the tree it was built in, which may since hold other builds or be gone.
  // /proc/self/exe is the resolved path: compare it with the build folder resolved too (it may be reached by a link).
  fs::path build_dir = fs::weakly_canonical(DAQX_BUILD_DIR, error);
  if (error) build_dir = DAQX_BUILD_DIR;
  const fs::path from_build = program_dir.lexically_relative(build_dir);
  if (!from_build.empty() && *from_build.begin() != "..") dirs.emplace_back(DAQX_BUILD_MODULE_DIR);
  return dirs;
}

std::string ModuleRegistry::load(const std::string& spec, const std::string& partition_dir) {
  namespace fs = std::filesystem;
  std::string path;
  if (spec.find('/') != std::string::npos) {
    fs::path candidate(spec);
    if (candidate.is_relative() && !partition_dir.empty()) candidate = fs::path(partition_dir) / candidate;
    if (!fs::exists(candidate)) return "module file '" + candidate.string() + "' does not exist";
    path = candidate.string();
  } else {
    std::string searched;
    for (const std::string& dir : search_path()) {
      fs::path candidate = fs::path(dir) / spec;
      if (fs::exists(candidate)) {
        path = candidate.string();
        break;
      }
      searched += (searched.empty() ? "" : ", ") + dir;
    }
    if (path.empty()) return "module '" + spec + "' not found (searched " + searched + "; set DAQX_MODULE_PATH)";
  }
  // dlopen would block on a FIFO and read a device without end; only a regular file can be a shared object.
  std::error_code status_error;
  const fs::file_status status = fs::status(path, status_error);
  if (status_error) return "cannot load module " + strings::quoted(path) + ": " + status_error.message();
  if (!fs::is_regular_file(status))
    return "module " + strings::quoted(path) + " is not a shared object: it is " + file_kind(status.type());
  for (const std::string& loaded : paths_)
    if (fs::equivalent(loaded, path)) return {};  // loading twice is harmless: the first load serves
  // Modules stay loaded for the life of the process (never dlclose): their code may still be on a stack
  // trace, and sanitizer reports need their symbols.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return "cannot load module " + strings::quoted(path) + ": " + strings::printable(dlerror());
  using Entry = const ModuleDescriptor* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, DAQX_MODULE_ENTRY_NAME));
  if (entry == nullptr) return strings::quoted(path) + " is not a daqx module: it has no " DAQX_MODULE_ENTRY_NAME " entry point";
  const ModuleDescriptor* descriptor = entry();
  if (descriptor == nullptr) return "module '" + path + "' returned no description";
  if (descriptor->abi_version != kModuleAbiVersion)
    return "module '" + path + "' was built for module ABI " + std::to_string(descriptor->abi_version) +
           ", this executive has ABI " + std::to_string(kModuleAbiVersion) + ": rebuild it";
  for (const ApplicationClass& c : descriptor->applications)
    if (application_class(c.name) != nullptr) return "module '" + path + "' provides class '" + c.name + "' again";
  for (const TransportClass& t : descriptor->transports)
    if (transport_class(t.protocol) != nullptr)
      return "module '" + path + "' provides protocol '" + t.protocol + "' again";
  modules_.push_back(descriptor);
  paths_.push_back(path);
  for (const ApplicationClass& c : descriptor->applications) {
    std::vector<ParamSpec> params = c.params;
    for (ParamSpec& extra : executive_application_params()) params.push_back(std::move(extra));
    application_params_[c.name] = std::move(params);
  }
  return {};
}

const ApplicationClass* ModuleRegistry::application_class(std::string_view name) const noexcept {
  for (const ModuleDescriptor* m : modules_)
    for (const ApplicationClass& c : m->applications)
      if (c.name == name) return &c;
  return nullptr;
}

const TransportClass* ModuleRegistry::transport_class(std::string_view protocol) const noexcept {
  for (const ModuleDescriptor* m : modules_)
    for (const TransportClass& t : m->transports)
      if (t.protocol == protocol) return &t;
  return nullptr;
}

const std::vector<ParamSpec>* ModuleRegistry::application_params(std::string_view class_name) const {
  auto found = application_params_.find(class_name);
  return found == application_params_.end() ? nullptr : &found->second;
}

const std::vector<ParamSpec>* ModuleRegistry::transport_params(std::string_view protocol) const {
  const TransportClass* t = transport_class(protocol);
  return t == nullptr ? nullptr : &t->params;
}

std::vector<std::string> ModuleRegistry::application_classes() const {
  std::vector<std::string> names;
  for (const ModuleDescriptor* m : modules_)
    for (const ApplicationClass& c : m->applications) names.push_back(c.name);
  return names;
}

std::vector<std::string> ModuleRegistry::transport_protocols() const {
  std::vector<std::string> names;
  for (const ModuleDescriptor* m : modules_)
    for (const TransportClass& t : m->transports) names.push_back(t.protocol);
  return names;
}

std::vector<ParamSpec> executive_application_params() {
  return {ParamSpec{"transportMode", ParamType::string, "endpoint", "",
                    "how transports send this application's frames: endpoint (as the endpoint's mode says), "
                    "latency (each at once) or throughput (coalesced)",
                    {}, {}, {"endpoint", "latency", "throughput"}},
          ParamSpec{"dispatch", ParamType::string, "auto", "",
                    "where handlers of frames from transports run: thread (the application's dispatch thread), "
                    "inline (the transport's receive thread, when the application is not busy), or auto (inline "
                    "when the class declares its handlers fit for it)",
                    {}, {}, {"thread", "inline", "auto"}}};
}

}  // namespace daqx::detail
