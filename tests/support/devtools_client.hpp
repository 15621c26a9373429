// A headless Chromium started by a test and driven over the Chrome DevTools Protocol (CDP) through one WebSocket
// to a page: navigate, evaluate JavaScript, read the DOM, take screenshots, and collect what the page reported
// to its console (errors, exceptions) on the way.
#pragma once

#include <sys/types.h>

#include <Poco/JSON/Object.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace Poco::Net {
class WebSocket;
class HTTPClientSession;
}

namespace daqx::test {

// The browser's binary: DAQX_CHROMIUM when set, else /usr/bin/chromium; empty when that is not an executable.
std::string chromium_program();

class Chromium {
 public:
  // Starts `program` headless with a profile in a fresh scratch folder and the DevTools port on a free port of
  // 127.0.0.1; waits (at most `limit`) until its DevTools endpoint answers. Throws std::runtime_error with the
  // browser's output when it does not come up.
  explicit Chromium(const std::string& program, std::chrono::milliseconds limit = std::chrono::seconds(60));
  ~Chromium();  // kills the browser (its whole process group) and removes the profile
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  const std::string& devtools_host_port() const noexcept { return host_port_; }  // "127.0.0.1:PORT"
  std::string output() const;  // what the browser printed

 private:
  pid_t pid_ = -1;
  std::string profile_;
  std::string output_path_;
  std::string host_port_;
};

// What the page said on its console, or threw, while the client watched: Runtime.consoleAPICalled (type error),
// Runtime.exceptionThrown and Log.entryAdded (level error).
struct PageProblem {
  std::string kind;  // "console", "exception", "log"
  std::string text;
};

class DevToolsPage {
 public:
  // Opens a new tab of `browser` (Target.createTarget through /json/new) and connects to it; enables the Runtime,
  // Log and Page domains so their events are collected.
  explicit DevToolsPage(const Chromium& browser);
  ~DevToolsPage();
  DevToolsPage(const DevToolsPage&) = delete;
  DevToolsPage& operator=(const DevToolsPage&) = delete;

  // One CDP command; returns its "result". Throws std::runtime_error on a protocol error or after `limit`.
  Poco::JSON::Object::Ptr call(const std::string& method, const std::string& params_json = "{}",
                               std::chrono::milliseconds limit = std::chrono::seconds(30));

  // Navigates and waits for the load event (Page.loadEventFired).
  void navigate(const std::string& url, std::chrono::milliseconds limit = std::chrono::seconds(30));
  // Runtime.evaluate of an expression whose value is turned into text in the page (String(...)); throws with the
  // exception's text when it throws.
  std::string text(const std::string& expression);
  // The document's outer HTML through the DOM domain: works with scripts disabled too.
  std::string document_html();
  // Polls text(expression) until it equals `wanted` or the limit passes; returns the last value.
  std::string wait_text(const std::string& expression, const std::string& wanted, std::chrono::milliseconds limit);
  // Page.captureScreenshot (PNG, the whole page) into `path`.
  void screenshot(const std::string& path);
  // Emulation.setScriptExecutionDisabled.
  void disable_scripts(bool disabled);

  // Everything collected so far (events are read while commands wait for their answers; drain() reads what
  // came since).
  const std::vector<PageProblem>& problems();
  void drain(std::chrono::milliseconds quiet = std::chrono::milliseconds(200));

 private:
  void handle_event(const Poco::JSON::Object::Ptr& message);
  Poco::JSON::Object::Ptr receive(std::chrono::milliseconds limit);  // one message; null on timeout
  std::unique_ptr<Poco::Net::HTTPClientSession> session_;
  std::unique_ptr<Poco::Net::WebSocket> socket_;
  std::string host_port_;
  std::string target_id_;
  int next_id_ = 1;
  std::vector<PageProblem> problems_;
  int loads_ = 0;  // Page.loadEventFired seen
};

// Where tests save what they show (screenshots): build/<type>/test-output/<area>/, made when missing.
std::string test_output_directory(const std::string& area);

}  // namespace daqx::test
