// Chromium started headless and one tab driven over the DevTools protocol with Poco's WebSocket.
#include "devtools_client.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Poco/Buffer.h>
#include <Poco/Exception.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/WebSocket.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "executive_process.hpp"
#include "process.hpp"

namespace daqx::test {
namespace {

using Clock = std::chrono::steady_clock;

Poco::JSON::Object::Ptr parse_object(const std::string& text) {
  Poco::JSON::Parser parser;
  return parser.parse(text).extract<Poco::JSON::Object::Ptr>();
}

// A JSON string literal of `text`, for the parameters of a command.
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string base64_decode(const std::string& text) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = -8;
  for (char c : text) {
    const std::size_t index = alphabet.find(c);
    if (index == std::string::npos) continue;  // '=' and line breaks
    value = (value << 6) + static_cast<unsigned>(index);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((value >> bits) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

}  // namespace

std::string chromium_program() {
  if (const char* given = std::getenv("DAQX_CHROMIUM"); given != nullptr && *given != '\0')
    return ::access(given, X_OK) == 0 ? std::string(given) : std::string();
  if (::access("/usr/bin/chromium", X_OK) == 0) return "/usr/bin/chromium";
  return {};
}

std::string test_output_directory(const std::string& area) {
  const std::string path = std::string(DAQX_TEST_OUTPUT_DIR) + "/" + area;
  std::filesystem::create_directories(path);
  return path;
}

Chromium::Chromium(const std::string& program, std::chrono::milliseconds limit) {
  static int count = 0;
  profile_ = scratch_directory() + "/chromium-profile-" + std::to_string(++count);
  std::filesystem::create_directories(profile_);
  output_path_ = profile_ + ".out";
  std::vector<std::string> argv = {program,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-quic",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-dev-shm-usage",
                                   "--window-size=1280,1000",
                                   "--user-data-dir=" + profile_,
                                   "--remote-debugging-address=127.0.0.1",
                                   "--remote-debugging-port=0",
                                   "about:blank"};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);  // the browser's helpers too: killed together
    const int fd = open(output_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    const int null = open("/dev/null", O_RDONLY);
    dup2(null, STDIN_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  // The browser writes its port (and the browser target's path) there once it listens.
  const std::string active_port = profile_ + "/DevToolsActivePort";
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    std::ifstream in(active_port);
    std::string port;
    if (in && std::getline(in, port) && !port.empty() && in.peek() != EOF) {
      host_port_ = std::string("127.0.0.1:") + port;
      return;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("chromium ended (" + wait_status_words(status) + ") before its DevTools port opened:\n" +
                               last_lines(output(), 30));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("chromium's DevTools port did not open within the limit:\n" + last_lines(output(), 30));
}

Chromium::~Chromium() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::error_code ignored;
  std::filesystem::remove_all(profile_, ignored);
}

std::string Chromium::output() const { return read_text(output_path_); }

DevToolsPage::DevToolsPage(const Chromium& browser) : host_port_(browser.devtools_host_port()) {
  const Poco::URI base("http://" + host_port_);
  // A tab of its own: /json/new answers its target, with the WebSocket to drive it.
  Poco::Net::HTTPClientSession http(base.getHost(), base.getPort());
  http.setTimeout(Poco::Timespan(10, 0));
  Poco::Net::HTTPRequest request(Poco::Net::HTTPRequest::HTTP_PUT, "/json/new?about:blank", Poco::Net::HTTPMessage::HTTP_1_1);
  request.setContentLength(0);  // without it the browser waits for a body that never comes
  http.sendRequest(request);
  Poco::Net::HTTPResponse response;
  std::istream& in = http.receiveResponse(response);
  std::ostringstream body;
  Poco::StreamCopier::copyStream(in, body);
  if (response.getStatus() != Poco::Net::HTTPResponse::HTTP_OK)
    throw std::runtime_error("DevTools /json/new answered " + std::to_string(response.getStatus()) + ": " + body.str());
  const Poco::JSON::Object::Ptr target = parse_object(body.str());
  target_id_ = target->getValue<std::string>("id");
  const Poco::URI socket_uri(target->getValue<std::string>("webSocketDebuggerUrl"));

  session_ = std::make_unique<Poco::Net::HTTPClientSession>(socket_uri.getHost(), socket_uri.getPort());
  Poco::Net::HTTPRequest upgrade(Poco::Net::HTTPRequest::HTTP_GET, socket_uri.getPathEtc(), Poco::Net::HTTPMessage::HTTP_1_1);
  Poco::Net::HTTPResponse upgraded;
  socket_ = std::make_unique<Poco::Net::WebSocket>(*session_, upgrade, upgraded);
  socket_->setMaxPayloadSize(256 << 20);  // screenshots of long pages are megabytes of base64
  call("Runtime.enable");
  call("Log.enable");
  call("Page.enable");
  call("DOM.enable");
}

DevToolsPage::~DevToolsPage() {
  try {
    socket_->shutdown();
    socket_->close();
  } catch (...) {
    // The browser may be gone already: nothing to close.
  }
}

Poco::JSON::Object::Ptr DevToolsPage::receive(std::chrono::milliseconds limit) {
  socket_->setReceiveTimeout(Poco::Timespan(static_cast<long>(limit.count() / 1000), static_cast<long>(limit.count() % 1000) * 1000));
  std::string message;
  for (;;) {
    Poco::Buffer<char> buffer(0);
    int flags = 0;
    try {
      const int n = socket_->receiveFrame(buffer, flags);
      if (n == 0 && flags == 0) throw std::runtime_error("the browser closed the DevTools connection");
    } catch (const Poco::TimeoutException&) {
      if (message.empty()) return nullptr;
      throw std::runtime_error("a DevTools message stopped half way");
    }
    const int opcode = flags & Poco::Net::WebSocket::FRAME_OP_BITMASK;
    if (opcode == Poco::Net::WebSocket::FRAME_OP_CLOSE) throw std::runtime_error("the browser closed the DevTools connection");
    if (opcode == Poco::Net::WebSocket::FRAME_OP_PING || opcode == Poco::Net::WebSocket::FRAME_OP_PONG) continue;
    message.append(buffer.begin(), buffer.size());
    if ((flags & Poco::Net::WebSocket::FRAME_FLAG_FIN) != 0) break;
  }
  return parse_object(message);
}

void DevToolsPage::handle_event(const Poco::JSON::Object::Ptr& message) {
  const std::string method = message->optValue<std::string>("method", "");
  const Poco::JSON::Object::Ptr params = message->getObject("params");
  if (!params) return;
  if (method == "Page.loadEventFired") {
    ++loads_;
  } else if (method == "Runtime.consoleAPICalled") {
    if (params->optValue<std::string>("type", "") != "error") return;
    std::string text;
    const Poco::JSON::Array::Ptr args = params->getArray("args");
    for (std::size_t i = 0; args && i < args->size(); ++i) {
      const Poco::JSON::Object::Ptr arg = args->getObject(static_cast<unsigned>(i));
      if (!arg) continue;
      if (!text.empty()) text += ' ';
      text += arg->has("value") ? arg->get("value").toString() : arg->optValue<std::string>("description", "?");
    }
    problems_.push_back({"console", text});
  } else if (method == "Runtime.exceptionThrown") {
    const Poco::JSON::Object::Ptr details = params->getObject("exceptionDetails");
    std::string text = details ? details->optValue<std::string>("text", "") : "";
    if (details && details->getObject("exception"))
      text += std::string(" ") + details->getObject("exception")->optValue<std::string>("description", "");
    problems_.push_back({"exception", text});
  } else if (method == "Log.entryAdded") {
    const Poco::JSON::Object::Ptr entry = params->getObject("entry");
    if (entry && entry->optValue<std::string>("level", "") == "error")
      problems_.push_back({"log", entry->optValue<std::string>("text", "") + " " + entry->optValue<std::string>("url", "")});
  }
}

Poco::JSON::Object::Ptr DevToolsPage::call(const std::string& method, const std::string& params_json,
                                           std::chrono::milliseconds limit) {
  const int id = next_id_++;
  const std::string message = std::string("{\"id\":") + std::to_string(id) + ",\"method\":" + json_string(method) +
                              ",\"params\":" + params_json + "}";
  socket_->sendFrame(message.data(), static_cast<int>(message.size()), Poco::Net::WebSocket::FRAME_TEXT);
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const Poco::JSON::Object::Ptr answer = receive(std::max(left, std::chrono::milliseconds(1)));
    if (!answer) break;
    if (!answer->has("id")) {
      handle_event(answer);
      continue;
    }
    if (answer->getValue<int>("id") != id) continue;
    if (const Poco::JSON::Object::Ptr error = answer->getObject("error"))
      throw std::runtime_error(method + " failed: " + error->optValue<std::string>("message", "?"));
    const Poco::JSON::Object::Ptr result = answer->getObject("result");
    return result ? result : Poco::JSON::Object::Ptr(new Poco::JSON::Object);
  }
  throw std::runtime_error(method + ": no answer from the browser within the limit");
}

void DevToolsPage::navigate(const std::string& url, std::chrono::milliseconds limit) {
  const int before = loads_;
  const Poco::JSON::Object::Ptr result = call("Page.navigate", std::string("{\"url\":") + json_string(url) + "}", limit);
  if (result->has("errorText")) throw std::runtime_error("navigating to " + url + ": " + result->getValue<std::string>("errorText"));
  const auto deadline = Clock::now() + limit;
  while (loads_ == before && Clock::now() < deadline) {
    const Poco::JSON::Object::Ptr message = receive(std::chrono::milliseconds(200));
    if (message && !message->has("id")) handle_event(message);
  }
  if (loads_ == before) throw std::runtime_error("the page " + url + " did not finish loading within the limit");
}

std::string DevToolsPage::text(const std::string& expression) {
  const Poco::JSON::Object::Ptr result =
      call("Runtime.evaluate", std::string("{\"expression\":") + json_string("String(" + expression + ")") + ",\"returnByValue\":true}");
  if (const Poco::JSON::Object::Ptr details = result->getObject("exceptionDetails")) {
    const Poco::JSON::Object::Ptr exception = details->getObject("exception");
    throw std::runtime_error("evaluating " + expression + ": " +
                             (exception ? exception->optValue<std::string>("description", "") : details->optValue<std::string>("text", "")));
  }
  const Poco::JSON::Object::Ptr value = result->getObject("result");
  return value && value->has("value") ? value->get("value").toString() : std::string();
}

std::string DevToolsPage::wait_text(const std::string& expression, const std::string& wanted, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  std::string last;
  for (;;) {
    last = text(expression);
    if (last == wanted || Clock::now() >= deadline) return last;
    drain(std::chrono::milliseconds(250));
  }
}

std::string DevToolsPage::document_html() {
  const Poco::JSON::Object::Ptr document = call("DOM.getDocument", "{\"depth\":0}");
  const int root = document->getObject("root")->getValue<int>("nodeId");
  return call("DOM.getOuterHTML", std::string("{\"nodeId\":") + std::to_string(root) + "}")->getValue<std::string>("outerHTML");
}

void DevToolsPage::screenshot(const std::string& path) {
  const Poco::JSON::Object::Ptr result =
      call("Page.captureScreenshot", "{\"format\":\"png\",\"captureBeyondViewport\":true}", std::chrono::seconds(60));
  std::ofstream out(path, std::ios::binary);
  out << base64_decode(result->getValue<std::string>("data"));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void DevToolsPage::disable_scripts(bool disabled) {
  call("Emulation.setScriptExecutionDisabled", std::string("{\"value\":") + (disabled ? "true" : "false") + "}");
}

const std::vector<PageProblem>& DevToolsPage::problems() {
  drain(std::chrono::milliseconds(0));
  return problems_;
}

void DevToolsPage::drain(std::chrono::milliseconds quiet) {
  for (;;) {
    const Poco::JSON::Object::Ptr message = receive(std::max(quiet, std::chrono::milliseconds(1)));
    if (!message) return;
    if (!message->has("id")) handle_event(message);
  }
}

}  // namespace daqx::test
