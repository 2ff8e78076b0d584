// The workflow the durable-run fault tests run in several processes: the
// test binary and switchboard_orchestrator_durable_helper build it
// identically. Every agent call appends "<agent>\n" to a counter file
// (O_APPEND, written before the agent answers), so the calls of every
// process that touched a run, killed ones included, can be counted.
//
//   one -> two -> ask -> three -> four -> done
//
// "ask" is unsure (a question) until the user answered, then echoes the
// answer; "four" answers "done with <ask's answer>", the run's result.
#pragma once

#include <switchboard/agents/agent.hpp>
#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/orchestrator/workflow.hpp>

#include "orchestrator_test_support.hpp"

#include <boost/asio/awaitable.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace switchboard::orchestrator::testing {

inline constexpr const char* durable_question = "Which answer do you mean?";

// Appends "<name>\n" to `path` in one write(2) with O_APPEND: the line is in
// the file (the page cache outlives the process) before the agent answers.
inline void append_call(const std::string& path, std::string_view name) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot open the call counter " + path);
  const std::string line = std::string(name) + "\n";
  const auto written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size())) throw std::runtime_error("cannot write the call counter " + path);
}

// How many times each agent was called, from a counter file.
inline std::map<std::string, int> read_calls(const std::string& path) {
  std::map<std::string, int> calls;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) ++calls[line];
  return calls;
}

// A native agent that counts its calls in a file and may wait (`hold`,
// given the 1-based call number of this process) before it answers.
class counted_agent final : public agents::agent {
 public:
  using answer_fn = std::function<protocol::envelope(agents::agent_context&)>;
  using hold_fn = std::function<boost::asio::awaitable<void>(int call)>;

  counted_agent(std::string name, std::string counter, answer_fn answer, hold_fn hold = {})
      : name_(std::move(name)), counter_(std::move(counter)), answer_(std::move(answer)), hold_(std::move(hold)) {}

  std::string_view name() const noexcept override { return name_; }
  std::string_view description() const noexcept override { return "a counted test agent"; }
  std::string output_schema() const override { return "test.output@1"; }

  boost::asio::awaitable<protocol::envelope> run(agents::agent_context& context) override {
    const int call = ++calls_;
    append_call(counter_, name_);
    if (hold_) {
      auto held = hold_(call);
      co_await std::move(held);
    }
    co_return answer_(context);
  }

  int calls() const noexcept { return calls_; }

 private:
  std::string name_;
  std::string counter_;
  answer_fn answer_;
  hold_fn hold_;
  std::atomic<int> calls_{0};
};

struct durable_agents {
  std::shared_ptr<counted_agent> one, two, ask, three, four;
};

// Optional behaviour of the agents, for the in-process tests.
struct durable_hooks {
  counted_agent::hold_fn hold_two;      // runs before "two" answers
  counted_agent::answer_fn two_answer;  // replaces "two"'s answer
  std::function<void()> on_question;   // "ask" is about to ask its question
};

// Registers one, two, ask, three, four.
inline durable_agents register_durable_agents(agents::agent_registry& registry, const std::string& counter,
                                              durable_hooks hooks = {}) {
  auto fixed = [](std::string status) {
    return [status](agents::agent_context&) { return make_envelope({{"status", status}}, 0.9, "Done."); };
  };
  durable_agents a;
  a.one = std::make_shared<counted_agent>("one", counter, fixed("one"));
  a.two = std::make_shared<counted_agent>("two", counter,
                                          hooks.two_answer ? std::move(hooks.two_answer) : fixed("two"),
                                          std::move(hooks.hold_two));
  a.ask = std::make_shared<counted_agent>(
      "ask", counter, [on_question = std::move(hooks.on_question)](agents::agent_context& c) {
        if (c.clarification_answers.empty()) {
          if (on_question) on_question();
          return make_envelope({{"clarification_question", durable_question}}, 0.3, "The answer is ambiguous.");
        }
        return make_envelope({{"status", c.clarification_answers.back()}}, 0.95, "Answer understood.");
      });
  a.three = std::make_shared<counted_agent>("three", counter, fixed("three"));
  a.four = std::make_shared<counted_agent>("four", counter, [](agents::agent_context& c) {
    const auto* asked = c.outputs.latest("ask");
    std::string answer = asked && asked->data.contains("status") ? std::string(asked->data.at("status").as_string())
                                                                 : std::string("nothing");
    return make_envelope({{"status", "done with " + answer}}, 0.9, "Finished.");
  });
  for (const auto& agent : {a.one, a.two, a.ask, a.three, a.four}) registry.add(agent);
  return a;
}

// `ask_node` names the node that runs "ask" (a renamed node is a changed
// definition).
inline workflow_builder durable_workflow(const std::string& ask_node = "ask") {
  workflow_builder b{"durable"};
  b.agent("one").otherwise("two");
  b.agent("two").otherwise(ask_node);
  b.agent(ask_node, "ask").otherwise("three");
  b.agent("three").otherwise("four");
  b.agent("four").otherwise("done");
  b.end("done");
  return b;
}

}  // namespace switchboard::orchestrator::testing
