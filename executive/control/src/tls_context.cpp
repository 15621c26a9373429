// Poco NetSSL contexts for the control port: TLS 1.2 or later, certificates from files, no global SSLManager setup.
#include "tls_context.hpp"

#include <map>
#include <mutex>
#include <stdexcept>

#include <Poco/Exception.h>
#include <Poco/Net/NetSSL.h>

namespace daqx::http {
namespace {

// Once per process and never undone: a client may still be talking while the process exits.
void initialize_ssl() {
  static std::once_flag once;
  std::call_once(once, [] { Poco::Net::initializeSSL(); });
}

}  // namespace

Poco::Net::Context::Ptr server_tls_context(const std::string& certificate_file, const std::string& key_file) {
  initialize_ssl();
  try {
    Poco::Net::Context::Params params;
    params.certificateFile = certificate_file;
    params.privateKeyFile = key_file;
    params.verificationMode = Poco::Net::Context::VERIFY_NONE;  // clients prove themselves with the token
    params.loadDefaultCAs = false;
    Poco::Net::Context::Ptr context = new Poco::Net::Context(Poco::Net::Context::TLS_SERVER_USE, params);
    context->requireMinimumProtocol(Poco::Net::Context::PROTO_TLSV1_2);
    return context;
  } catch (const Poco::Exception& error) {
    throw std::runtime_error("cannot use TLS certificate " + certificate_file + " with key " + key_file + ": " +
                             error.displayText());
  }
}

Poco::Net::Context::Ptr client_tls_context(const std::string& ca_file) {
  initialize_ssl();
  static std::mutex mutex;
  static std::map<std::string, Poco::Net::Context::Ptr> contexts;
  std::lock_guard lock(mutex);
  if (auto found = contexts.find(ca_file); found != contexts.end()) return found->second;
  try {
    Poco::Net::Context::Params params;
    params.caLocation = ca_file;
    params.loadDefaultCAs = ca_file.empty();
    // STRICT, not RELAXED: Poco skips the host name check for loopback names under RELAXED, and a certificate
    // for another host must be refused there too.
    params.verificationMode = Poco::Net::Context::VERIFY_STRICT;
    Poco::Net::Context::Ptr context = new Poco::Net::Context(Poco::Net::Context::TLS_CLIENT_USE, params);
    context->requireMinimumProtocol(Poco::Net::Context::PROTO_TLSV1_2);
    contexts.emplace(ca_file, context);
    return context;
  } catch (const Poco::Exception& error) {
    throw std::runtime_error("cannot use CA file " + ca_file + ": " + error.displayText());
  }
}

}  // namespace daqx::http
