// Phases from the partition file, one round of transition requests per phase over a ControlRequestPool, and the
// outcome's report.
#include "daqx/control/partition_transition.hpp"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <algorithm>
#include <cstdio>

namespace daqx {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> class_set(const config::ContextConfig& context) {
  std::vector<std::string> classes;
  for (const config::ApplicationConfig& application : context.applications) classes.push_back(application.class_name);
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  return classes;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string text_of(const Poco::JSON::Object::Ptr& object, const std::string& key) {
  if (!object || !object->has(key) || object->isNull(key)) return {};
  return object->get(key).convert<std::string>();
}

// What a context's answer to a transition says: done, or refused and why, and the states after it.
ContextOutcome outcome_of(const std::string& url, const HttpReply& reply, std::chrono::milliseconds deadline) {
  ContextOutcome outcome;
  outcome.url = url;
  outcome.status = reply.status;
  if (!reply.answered()) {
    outcome.result = ContextOutcome::Result::no_answer;
    outcome.timed_out = reply.timed_out;
    outcome.reason = reply.timed_out ? "no answer within " + seconds_text(std::chrono::duration<double>(deadline).count()) + " s"
                                     : "no answer: " + reply.body;
    return outcome;
  }
  Poco::JSON::Object::Ptr result;
  try {
    const Poco::Dynamic::Var parsed = Poco::JSON::Parser().parse(reply.body);
    if (parsed.type() == typeid(Poco::JSON::Object::Ptr)) result = parsed.extract<Poco::JSON::Object::Ptr>();
  } catch (const Poco::Exception&) {
    // Not JSON: below.
  }
  if (!result) {  // not our API: as good as no answer
    outcome.result = ContextOutcome::Result::no_answer;
    outcome.reason = "answered " + std::to_string(reply.status) + " without JSON";
    return outcome;
  }
  const Poco::JSON::Array::Ptr states = result->getArray("states");
  for (std::size_t i = 0; states && i < states->size(); ++i) {
    const Poco::JSON::Object::Ptr state = states->getObject(static_cast<unsigned>(i));
    if (!outcome.states.empty()) outcome.states += ' ';
    outcome.states += text_of(state, "tid") + ":" + text_of(state, "state");
  }
  if (reply.status == 200 && result->optValue<bool>("ok", false)) {
    outcome.result = ContextOutcome::Result::done;
    return outcome;
  }
  outcome.result = ContextOutcome::Result::refused;
  outcome.reason = text_of(result, "message");
  if (outcome.reason.empty()) outcome.reason = text_of(result, "error");
  if (outcome.reason.empty()) outcome.reason = "no reason given";
  return outcome;
}

}  // namespace

ContextPhases transition_phases(const config::Partition& partition,
                                const std::function<bool(const std::string& url)>& filter) {
  ContextPhases phases;
  std::vector<std::string> previous;
  bool first = true;
  for (const config::ContextConfig& context : partition.contexts) {
    std::vector<std::string> classes = class_set(context);
    // A phase is a run of contexts with one set of classes: a context turned down by the filter still ends a run,
    // so that the phases are the same whichever contexts take part.
    if (first || classes != previous) phases.emplace_back();
    first = false;
    previous = std::move(classes);
    if (!filter || filter(context.url)) phases.back().push_back(context.url);
  }
  std::erase_if(phases, [](const std::vector<std::string>& phase) { return phase.empty(); });
  return phases;
}

bool brings_down(const std::string& command) noexcept { return command == "stop" || command == "halt"; }

std::size_t TransitionOutcome::count(ContextOutcome::Result result) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(contexts.begin(), contexts.end(), [&](const ContextOutcome& c) { return c.result == result; }));
}

std::vector<std::string> TransitionOutcome::failure_lines() const {
  std::vector<std::string> lines;
  for (const ContextOutcome& context : contexts) {
    if (context.result == ContextOutcome::Result::no_answer)
      lines.push_back(context.url + " " + command + ": " + context.reason);
    else if (context.result == ContextOutcome::Result::refused)
      lines.push_back(context.url + " " + command + ": refused (" + std::to_string(context.status) + "): " + context.reason +
                      (context.states.empty() ? "" : " [states: " + context.states + "]"));
  }
  const std::size_t not_asked = count(ContextOutcome::Result::not_asked);
  if (not_asked != 0) {
    const auto first = std::find_if(contexts.begin(), contexts.end(),
                                    [](const ContextOutcome& c) { return c.result == ContextOutcome::Result::not_asked; });
    lines.push_back(command + ": not asked, as an earlier phase did not complete: " + std::to_string(not_asked) +
                    (not_asked == 1 ? " context (" : " contexts (first ") + first->url + ")");
  }
  return lines;
}

std::string TransitionOutcome::total_line() const {
  char seconds_taken[32];
  std::snprintf(seconds_taken, sizeof seconds_taken, "%.2f", seconds);
  std::string line = command + ": " + std::to_string(count(ContextOutcome::Result::done)) + "/" +
                     std::to_string(contexts.size()) + " contexts in " + seconds_taken + " s (" +
                     std::to_string(phases) + (phases == 1 ? " phase" : " phases");
  const std::pair<ContextOutcome::Result, const char*> failures[] = {
      {ContextOutcome::Result::no_answer, " without an answer"},
      {ContextOutcome::Result::refused, " refused"},
      {ContextOutcome::Result::not_asked, " not asked"}};
  for (const auto& [result, said] : failures)
    if (const std::size_t n = count(result); n != 0) line += ", " + std::to_string(n) + said;
  return line + ")";
}

TransitionOutcome run_transition(const ContextPhases& phases, const TransitionRequest& request,
                                 ControlRequestPool& pool) {
  TransitionOutcome outcome;
  outcome.command = request.command;
  outcome.phases = phases.size();
  std::string body = R"({"command":")" + request.command + "\"";
  if (request.run) body += R"(,"run":)" + std::to_string(*request.run);
  body += "}";

  const bool down = brings_down(request.command);
  std::vector<const std::vector<std::string>*> order;
  for (const auto& phase : phases) order.push_back(&phase);
  if (down) std::reverse(order.begin(), order.end());

  const auto started = Clock::now();
  bool going = true;
  for (const std::vector<std::string>* phase : order) {
    if (!going) {
      for (const std::string& url : *phase) {
        ContextOutcome not_asked;
        not_asked.url = url;
        outcome.contexts.push_back(std::move(not_asked));
      }
      continue;
    }
    std::vector<ControlRequest> requests;
    requests.reserve(phase->size());
    for (const std::string& url : *phase)
      requests.push_back(ControlRequest{.url = url, .method = "POST", .path = request.path, .body = body,
                                        .deadline = request.deadline});
    const std::vector<HttpReply> replies = pool.send(requests);
    bool phase_done = true;
    for (std::size_t i = 0; i < phase->size(); ++i) {
      outcome.contexts.push_back(outcome_of((*phase)[i], replies[i], request.deadline));
      phase_done = phase_done && outcome.contexts.back().result == ContextOutcome::Result::done;
    }
    if (!phase_done && !down) going = false;
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return outcome;
}

}  // namespace daqx
