// The remote agent's paths that wait on the network — the task polled, the
// question turned into the hub's pause, the reply on the same task, the
// cancel sent when the step is cancelled — against a small scripted JSON-RPC
// server on 127.0.0.1, so that they also run under the sanitizers (the
// third-party agent's suite, tests/a2a_client, needs the whole program).
#include <switchboard/a2a/remote_agent.hpp>
#include <switchboard/agents/tool_journal.hpp>
#include <switchboard/net/http_server.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/logger.h>

#include <future>
#include <utility>
#include <mutex>

namespace switchboard::a2a {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A remote agent's JSON-RPC side: one task, whose state the test sets;
// every request kept.
struct scripted_agent {
  std::mutex mutex;
  std::string state = "TASK_STATE_WORKING";  // what SendMessage and GetTask answer
  std::string question = "Which day?";
  std::vector<json::object> requests;
  // The next `refusals` SendMessages (a start or a reply) answered with this status and body.
  int refusals = 0;
  int refusal_status = 0;
  std::string refusal_body;

  json::object task() const {
    json::object status{{"state", state}};
    if (state == "TASK_STATE_INPUT_REQUIRED") {
      status["message"] = json::object{{"messageId", "q"}, {"role", "ROLE_AGENT"},
                                       {"parts", json::array{json::object{{"text", question}}}}};
    }
    json::object t{{"id", "task-1"}, {"contextId", "ctx-1"}, {"status", std::move(status)}};
    if (state == "TASK_STATE_COMPLETED") {
      t["artifacts"] = json::array{json::object{
          {"artifactId", "a"},
          {"parts", json::array{json::object{{"data", json::object{{"day", "tuesday"}}}},
                                json::object{{"text", "Booked"}}}}}};
    }
    return t;
  }

  // Its agent card, at GET /card.
  json::value card;

  net::server_response answer(const net::server_request& request) {
    if (request.method == "GET") {
      net::server_response response;
      std::lock_guard lock(mutex);
      response.body = json::serialize(card);
      return response;
    }
    auto rpc = json::parse(request.body).as_object();
    std::lock_guard lock(mutex);
    requests.push_back(rpc);
    const std::string method(rpc.at("method").as_string());
    if (method == "SendMessage" && refusals > 0) {
      --refusals;
      net::server_response refused;
      refused.status = refusal_status;
      refused.body = refusal_body;
      return refused;
    }
    json::value result;
    if (method == "SendMessage") {
      const auto& message = rpc.at("params").at("message").as_object();
      // A reply moves the task on: the test set what it becomes.
      if (message.contains("taskId") && state == "TASK_STATE_INPUT_REQUIRED") state = "TASK_STATE_COMPLETED";
      result = json::object{{"task", task()}};
    } else if (method == "CancelTask") {
      state = "TASK_STATE_CANCELED";
      result = task();
    } else {
      result = task();
    }
    net::server_response response;
    response.body = json::serialize(json::object{{"jsonrpc", "2.0"}, {"id", rpc.at("id")}, {"result", result}});
    return response;
  }

  std::vector<std::string> methods() {
    std::lock_guard lock(mutex);
    std::vector<std::string> out;
    for (const auto& r : requests) out.emplace_back(r.at("method").as_string());
    return out;
  }
};

std::string describe(std::exception_ptr failure) {
  if (!failure) return "no exception";
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "not a std::exception";
  }
}

class no_outputs final : public agents::agent_outputs {
 public:
  const protocol::envelope* latest(std::string_view) const override { return nullptr; }
  std::vector<std::string> agent_names() const override { return {}; }
};

class remote_agent_server : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<net::http_server>(
        io_.get_executor(), net::server_options{},
        [this](net::server_request& request) -> asio::awaitable<net::server_response> {
          co_return remote_.answer(request);
        });
    server_->start();
    config_.name = "booker";
    config_.url = "http://127.0.0.1:" + std::to_string(server_->port()) + "/a2a";
    config_.output_schema = "booking.output@1";
    config_.poll_interval = std::chrono::milliseconds(20);
  }

  // Runs one step of the agent with `answers` (cancelled, when
  // `cancel_once_polled`, as soon as the remote task was looked at once: its
  // id is known then); what it returned, or the exception it threw.
  struct outcome {
    std::optional<protocol::envelope> envelope;
    std::exception_ptr failure;
  };
  outcome step(remote_agent& agent, std::vector<std::string> answers = {}, bool cancel_once_polled = false) {
    const json::value input{{"request", "book a day"}};
    const no_outputs outputs;
    const agents::model_set models;
    agents::agent_context context{input, outputs, "", answers, models, std::make_shared<spdlog::logger>("test"),
                                  "", {}, {}, {}};
    context.journal = journal_;
    asio::cancellation_signal cancel;
    auto result = asio::co_spawn(io_, agent.run(context), asio::bind_cancellation_slot(cancel.slot(), asio::use_future));
    bool cancelled = false;
    // Until the step is over and whatever it left running (a cancel) is done.
    while (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      io_.run_one_for(std::chrono::milliseconds(10));
      if (cancel_once_polled && !cancelled && polled()) {
        cancelled = true;
        cancel.emit(asio::cancellation_type::terminal);
      }
    }
    outcome out;
    try {
      out.envelope = result.get();
    } catch (...) {
      out.failure = std::current_exception();
    }
    return out;
  }

  bool polled() {
    const auto methods = remote_.methods();
    return std::find(methods.begin(), methods.end(), "GetTask") != methods.end();
  }

  std::vector<std::string> kinds() const {
    std::vector<std::string> out;
    for (const auto& r : journal_->records()) out.emplace_back(r.at("kind").as_string());
    return out;
  }

  asio::io_context io_;
  scripted_agent remote_;
  std::unique_ptr<net::http_server> server_;
  remote_agent_config config_;
  std::shared_ptr<agents::memory_tool_journal> journal_ = std::make_shared<agents::memory_tool_journal>();
};

TEST_F(remote_agent_server, a_working_task_is_polled_until_it_completes) {
  remote_agent agent(config_);
  asio::steady_timer done(io_, std::chrono::milliseconds(150));
  done.async_wait([this](boost::system::error_code) {
    std::lock_guard lock(remote_.mutex);
    remote_.state = "TASK_STATE_COMPLETED";
  });
  const auto out = step(agent);
  ASSERT_FALSE(out.failure);
  ASSERT_TRUE(out.envelope);
  ASSERT_FALSE(out.envelope->failed()) << out.envelope->error->message;
  EXPECT_EQ(out.envelope->data.at("day"), "tuesday");
  const auto methods = remote_.methods();
  ASSERT_GE(methods.size(), 2u);
  EXPECT_EQ(methods.front(), "SendMessage");
  EXPECT_EQ(methods.back(), "GetTask");
  EXPECT_EQ(kinds(), (std::vector<std::string>{"a2a_send", "a2a_task"}));
  EXPECT_EQ(remote_.requests.front().at("params").at("configuration").at("returnImmediately"), true);
}

TEST_F(remote_agent_server, a_question_pauses_and_the_answer_goes_to_the_same_task) {
  remote_.state = "TASK_STATE_INPUT_REQUIRED";
  remote_agent agent(config_);
  auto asked = step(agent);
  ASSERT_TRUE(asked.failure);
  try {
    std::rethrow_exception(asked.failure);
  } catch (const agents::clarification_required& q) {
    EXPECT_EQ(q.question(), "Which day?");
  } catch (...) {
    FAIL() << "not a clarification";
  }
  EXPECT_EQ(kinds(), (std::vector<std::string>{"a2a_send", "a2a_task", "a2a_asked"}));

  // Answered: a new agent (another process, as far as the journal knows).
  remote_agent again(config_);
  const auto done = step(again, {"tuesday"});
  ASSERT_FALSE(done.failure) << describe(done.failure);
  ASSERT_FALSE(done.envelope->failed()) << done.envelope->error->message;
  EXPECT_EQ(done.envelope->data.at("day"), "tuesday");
  const auto& reply = remote_.requests.back().at("params").at("message");
  EXPECT_EQ(reply.at("taskId"), "task-1");
  EXPECT_EQ(reply.at("contextId"), "ctx-1");
  EXPECT_EQ(reply.at("parts").at(0).at("text"), "tuesday");
  EXPECT_FALSE(remote_.requests.back().at("params").as_object().contains("configuration"));  // blocking
  EXPECT_EQ(kinds(), (std::vector<std::string>{"a2a_send", "a2a_task", "a2a_asked", "a2a_reply"}));
  // One task: the start message went out once.
  const auto methods = remote_.methods();
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "SendMessage"), 2);
}

TEST_F(remote_agent_server, a_cancelled_step_leaves_the_task_to_its_next_run) {
  remote_agent agent(config_);
  const auto out = step(agent, {}, true);
  ASSERT_TRUE(out.failure);  // the cancellation, rethrown for the hub
  // Not cancelled on the remote: an interrupted run, or a retry after the
  // node's deadline, continues the same task.
  auto methods = remote_.methods();
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "CancelTask"), 0);
  remote_.state = "TASK_STATE_COMPLETED";
  remote_agent again(config_);
  const auto done = step(again);
  ASSERT_FALSE(done.failure) << describe(done.failure);
  ASSERT_FALSE(done.envelope->failed()) << done.envelope->error->message;
  methods = remote_.methods();
  EXPECT_EQ(std::count(methods.begin(), methods.end(), "SendMessage"), 1);  // one task
  EXPECT_EQ(methods.back(), "GetTask");
}

TEST_F(remote_agent_server, a_start_the_remote_never_took_is_sent_again_by_the_next_attempt) {
  remote_.refusals = 3;  // every attempt the HTTP client makes
  remote_.refusal_status = 503;
  remote_.refusal_body = R"({"error": "busy"})";
  remote_.state = "TASK_STATE_COMPLETED";
  config_.request_timeout = std::chrono::milliseconds(2000);
  remote_agent agent(config_);
  const auto busy = step(agent);
  ASSERT_TRUE(busy.envelope && busy.envelope->failed());
  EXPECT_EQ(busy.envelope->error->type, "remote_agent_unreachable");
  EXPECT_TRUE(busy.envelope->error->retryable);
  EXPECT_EQ(kinds(), (std::vector<std::string>{"a2a_send", "a2a_unsent"}));
  const auto done = step(agent);
  ASSERT_FALSE(done.envelope->failed()) << done.envelope->error->message;
  EXPECT_EQ(done.envelope->data.at("day"), "tuesday");
}

TEST_F(remote_agent_server, a_refused_answer_fails_the_step_saying_why_with_the_key_redacted) {
  remote_.state = "TASK_STATE_INPUT_REQUIRED";
  config_.headers = {{"Authorization", "Bearer sk-test-0123456789abcdef"}};
  remote_agent agent(config_);
  ASSERT_TRUE(step(agent).failure);  // asked
  remote_.refusals = 1;
  remote_.refusal_status = 400;
  remote_.refusal_body = "bad answer for Bearer sk-test-0123456789abcdef \xff\xfe";
  const auto refused = step(agent, {"tuesday"});
  ASSERT_FALSE(refused.failure) << describe(refused.failure);  // not asked again in its place
  ASSERT_TRUE(refused.envelope->failed());
  const auto& message = refused.envelope->error->message;
  EXPECT_THAT(message, AllOf(HasSubstr("'booker'"), HasSubstr("HTTP 400"), HasSubstr("bad answer"),
                             HasSubstr("task 'task-1'")));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("0123456789abcdef")));
  EXPECT_EQ(boost::json::serialize(json::value(message)).find("\xff"), std::string::npos);
}

TEST_F(remote_agent_server, a_task_is_not_continued_at_another_endpoint) {
  journal_ = std::make_shared<agents::memory_tool_journal>();
  remote_agent agent(config_);
  remote_.state = "TASK_STATE_INPUT_REQUIRED";
  ASSERT_TRUE(step(agent).failure);
  auto moved = config_;
  moved.url += "/elsewhere";
  remote_agent other(moved);
  const auto out = step(other, {"tuesday"});
  ASSERT_FALSE(out.failure) << describe(out.failure);
  ASSERT_TRUE(out.envelope->failed());
  EXPECT_EQ(out.envelope->error->type, "endpoint_changed");
  EXPECT_THAT(out.envelope->error->message, AllOf(HasSubstr("'task-1'"), HasSubstr("/elsewhere")));
}

TEST_F(remote_agent_server, the_card_names_the_json_rpc_interface_on_its_own_origin) {
  const std::string base = "http://127.0.0.1:" + std::to_string(server_->port());
  auto card_of = [](json::array interfaces) { return json::value{{"name", "booker"}, {"supportedInterfaces", interfaces}}; };
  auto with_card = config_;
  with_card.url.clear();
  with_card.card_url = base + "/card";
  remote_.state = "TASK_STATE_COMPLETED";

  // Only HTTP+JSON, then JSON-RPC on another origin (the key would go there): refused, saying what it offers.
  remote_.card = card_of(json::array{json::object{{"url", base + "/rest"}, {"protocolBinding", "HTTP+JSON"},
                                                  {"protocolVersion", "1.0"}}});
  remote_agent only_rest(with_card);
  const auto rest = step(only_rest);
  ASSERT_TRUE(rest.envelope && rest.envelope->failed());
  EXPECT_THAT(rest.envelope->error->message, AllOf(HasSubstr("no JSON-RPC interface"), HasSubstr("HTTP+JSON 1.0")));

  remote_.card = card_of(json::array{json::object{{"url", "http://agents.example:" + std::to_string(server_->port()) + "/a2a"},
                                                  {"protocolBinding", "JSONRPC"}, {"protocolVersion", "1.0"}}});
  remote_agent elsewhere(with_card);
  const auto other = step(elsewhere);
  ASSERT_TRUE(other.envelope && other.envelope->failed());
  EXPECT_THAT(other.envelope->error->message, AllOf(HasSubstr("another origin"), HasSubstr("agents.example")));
  EXPECT_TRUE(remote_.methods().empty());  // nothing was sent anywhere

  // The same origin: called.
  remote_.card = card_of(json::array{json::object{{"url", base + "/a2a"},
                                                  {"protocolBinding", "JSONRPC"}, {"protocolVersion", "1.0"}}});
  remote_agent here(with_card);
  const auto done = step(here);
  ASSERT_FALSE(done.envelope->failed()) << done.envelope->error->message;
  EXPECT_EQ(remote_.methods().front(), "SendMessage");
}

}  // namespace
}  // namespace switchboard::a2a
