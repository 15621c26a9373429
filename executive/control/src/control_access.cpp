// Where a client finds the token it presents and the CA it trusts: the command line, the environment, the partition.
#include <cstdlib>

#include "daqx/control/control_client.hpp"
#include "daqx/executive/partition.hpp"
#include "daqx/control/token_file.hpp"

namespace daqx {
namespace {

std::string first_named(const std::string& given, const char* variable, const std::string& from_partition) {
  if (!given.empty()) return given;
  const char* value = std::getenv(variable);
  if (value != nullptr && *value != '\0') return value;
  return from_partition;
}

}  // namespace

ControlAccess ControlAccess::from(const config::Partition* partition, const Files& given) {
  const config::ControlConfig none;
  const config::ControlConfig& control = partition != nullptr ? partition->control : none;
  ControlAccess access;
  const std::string token_file = first_named(given.token_file, "DAQX_TOKEN_FILE", control.token_file);
  if (!token_file.empty()) access.token = read_token_file(token_file);
  access.ca_file = first_named(given.ca_file, "DAQX_CA_FILE", control.ca);
  return access;
}

}  // namespace daqx
