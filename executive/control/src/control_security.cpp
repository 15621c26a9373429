// What an executive's control server asks of its clients, from the partition's <Control> and the environment.
#include <cstdlib>
#include <stdexcept>

#include "daqx/control/control_server.hpp"
#include "daqx/control/token_file.hpp"

namespace daqx {

ControlServerSecurity ControlServerSecurity::from(const config::Partition& partition) {
  const config::ControlConfig& control = partition.control;
  ControlServerSecurity security;
  // The environment wins, on the server as on the clients, so one DAQX_TOKEN_FILE makes both sides agree.
  const char* from_environment = std::getenv("DAQX_TOKEN_FILE");
  const std::string token_file =
      from_environment != nullptr && *from_environment != '\0' ? std::string(from_environment) : control.token_file;
  if (!token_file.empty()) security.token = read_token_file(token_file);
  security.reads_need_token = control.reads == config::ControlConfig::Reads::token;
  if (security.reads_need_token && security.token.empty())
    throw std::runtime_error(control.where.text() + ": <Control reads=\"token\"> but no token file: set tokenFile or "
                             "DAQX_TOKEN_FILE");
  if (control.tls) {
    security.certificate_file = control.certificate;
    security.key_file = control.key;
  }
  return security;
}

}  // namespace daqx
