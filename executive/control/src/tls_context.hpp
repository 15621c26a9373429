// The TLS settings of the control port, server and client side, in one place so both speak the same protocols.
#pragma once

#include <string>

#include <Poco/Net/Context.h>

namespace daqx::http {

// A server context from PEM files: the certificate (chain) the executive presents and its private key. Clients
// are not asked for certificates: the bearer token says who they are. Throws std::runtime_error naming the file.
Poco::Net::Context::Ptr server_tls_context(const std::string& certificate_file, const std::string& key_file);

// A client context that verifies the server's certificate against `ca_file` (PEM), or against the system's CAs
// when it is empty, and checks that the certificate names the host connected to. One per CA file per process.
Poco::Net::Context::Ptr client_tls_context(const std::string& ca_file);

}  // namespace daqx::http
