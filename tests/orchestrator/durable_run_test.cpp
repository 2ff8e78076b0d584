// Durable runs in one process: interrupt(), a changed definition, values
// that cannot be stored.
#include <switchboard/orchestrator/hub.hpp>
#include <switchboard/stores/sqlite_store.hpp>

#include "durable_run_fixture.hpp"

namespace switchboard::orchestrator {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using namespace durable_testing;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::read_calls;

// ---------------------------------------------------------------- 4. interrupt()

TEST_F(durable_run, an_interrupted_run_gives_up_its_step_in_flight_and_continues_later) {
  const auto calls = counter("interrupted");
  std::promise<void> two_started;
  testing::durable_hooks hooks;
  hooks.hold_two = [&](int call) -> asio::awaitable<void> {
    if (call != 1) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor, 1h);
    two_started.set_value();
    co_await timer.async_wait(asio::use_awaitable);  // cancelled by interrupt(): throws
  };
  agents::agent_registry registry(testing::test_schemas());
  auto agents = testing::register_durable_agents(registry, calls, std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto handle = h.start(workflow, durable_input(), with_id("interrupted"));
  ASSERT_EQ(two_started.get_future().wait_for(60s), std::future_status::ready);
  handle.interrupt();
  auto s = handle.wait();
  EXPECT_EQ(s.status, workflow_status::interrupted) << (s.first_error() ? s.first_error()->message : "");
  EXPECT_EQ(s.step, 1) << "the step in flight was given up";
  EXPECT_EQ(s.history("one").size(), 1u);
  EXPECT_TRUE(s.history("two").empty());
  handle.interrupt();  // no-op once done
  handle.cancel();
  EXPECT_EQ(handle.wait().status, workflow_status::interrupted);

  auto cp = await(store_->load("interrupted"));
  ASSERT_TRUE(cp);
  EXPECT_EQ(cp->status, workflow_status::interrupted);
  EXPECT_EQ(cp->step, 1);
  EXPECT_EQ(cp->owner, "") << "an interrupted run is released";
  EXPECT_EQ(await(h.find("interrupted"))->status, workflow_status::interrupted);

  // It is continued, not answered.
  auto wrong = refused_resume(h, workflow, "interrupted", answer("an answer"));
  EXPECT_EQ(wrong.errc(), orchestrator_errc::answer_required) << wrong.what();

  s = await(h.resume(workflow, "interrupted", resume_options{}));
  EXPECT_EQ(s.status, workflow_status::awaiting_clarification);
  s = await(h.resume(workflow, "interrupted", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("status"), "done with the answer");
  EXPECT_EQ(agents.one->calls(), 1);
  EXPECT_EQ(agents.two->calls(), 2);
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 2}}));
}

// ---------------------------------------------------------------- a save with an unknown outcome

// Fails the n-th save as a cut connection does: before the store took it,
// or after (it landed, the answer was lost).
// (the n-th save, or every save of `status`)
class cut_save_store final : public forwarding_checkpoint_store {
 public:
  cut_save_store(std::shared_ptr<checkpoint_store> inner, int cut_at, bool landed,
                 std::optional<workflow_status> status = std::nullopt)
      : forwarding_checkpoint_store(std::move(inner)), cut_at_(cut_at), landed_(landed), status_(status) {}
  asio::awaitable<void> save(save_request run) override {
    const bool cut = status_ ? run.status == *status_ : ++saves_ == cut_at_;
    if (!cut) co_return co_await inner().save(std::move(run));
    if (landed_) co_await inner().save(std::move(run));
    throw checkpoint_error("the connection was cut");
  }

 private:
  int saves_ = 0;
  const int cut_at_;
  const bool landed_;
  const std::optional<workflow_status> status_;
};

class cut_save : public durable_run, public ::testing::WithParamInterface<bool> {};

// The run stops (its in-memory end says checkpoint_failed); the stored run
// is not left running under a hub that renews it for ever, but interrupted
// at the save that last landed, and another hub continues it from there:
// the step whose save was cut runs again only if the save did not land.
TEST_P(cut_save, a_run_whose_save_was_cut_is_given_up_and_continued_from_its_last_save) {
  const bool landed = GetParam();
  const auto calls = counter("cut");
  agents::agent_registry registry(testing::test_schemas());
  auto agents = testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  auto cut = std::make_shared<cut_save_store>(store_, 2, landed);  // the save after step "two"
  hub first{io_.get_executor(), registry, testing::options(cut, {}, silent())};
  const auto stopped = await(first.run(workflow, durable_input(), with_id("cut")));
  EXPECT_EQ(stopped.status, workflow_status::failed);
  ASSERT_NE(stopped.first_error(), nullptr);
  EXPECT_EQ(stopped.first_error()->type, "checkpoint_failed");

  const auto stored = await(store_->load("cut"));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, workflow_status::interrupted);
  EXPECT_EQ(stored->owner, "");
  EXPECT_EQ(stored->step, landed ? 2 : 1);
  EXPECT_EQ(await(store_->renew(first.owner_id(), 30s)), 0u) << "nothing left for the first hub to renew";

  hub second{io_.get_executor(), registry, hub_opts()};
  auto s = await(second.resume(workflow, "cut", resume_options{}));
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  s = await(second.resume(workflow, "cut", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", landed ? 1 : 2}}));
}

// A completion that was not kept is not reported as one: the run says
// failed (checkpoint_failed), and the store has it where it last landed.
TEST_P(cut_save, a_completion_whose_save_was_cut_is_reported_failed_and_the_store_decides) {
  const bool landed = GetParam();
  const auto calls = counter("cut-end");
  agents::agent_registry registry(testing::test_schemas());
  auto agents = testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  hub plain{io_.get_executor(), registry, hub_opts()};
  ASSERT_EQ(await(plain.run(workflow, durable_input(), with_id("cut-end"))).status,
            workflow_status::awaiting_clarification);

  auto cut = std::make_shared<cut_save_store>(store_, 0, landed, workflow_status::completed);
  hub answering{io_.get_executor(), registry, testing::options(cut, {}, silent())};
  const auto answered = await(answering.resume(workflow, "cut-end", answer("the answer")));
  EXPECT_EQ(answered.status, workflow_status::failed);
  ASSERT_NE(answered.first_error(), nullptr);
  EXPECT_EQ(answered.first_error()->type, "checkpoint_failed");

  const auto stored = await(store_->load("cut-end"));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, landed ? workflow_status::completed : workflow_status::interrupted);
  if (!landed) {
    const auto done = await(plain.resume(workflow, "cut-end", resume_options{}));
    EXPECT_EQ(done.status, workflow_status::completed);
  }
  EXPECT_EQ(read_calls(calls), (calls_t{{"ask", 2}, {"four", 1}, {"one", 1}, {"three", 1}, {"two", 1}}));
}

// An update whose save was cut gives the run back: never left running under
// the updating hub; where the save did not land, the question still stands.
TEST_P(cut_save, an_update_whose_save_was_cut_gives_the_run_back) {
  const bool landed = GetParam();
  const auto calls = counter("cut-update");
  agents::agent_registry registry(testing::test_schemas());
  auto agents = testing::register_durable_agents(registry, calls);
  auto workflow = testing::durable_workflow().compile(registry);
  hub plain{io_.get_executor(), registry, hub_opts()};
  const auto paused = await(plain.run(workflow, durable_input(), with_id("cut-update")));
  ASSERT_EQ(paused.status, workflow_status::awaiting_clarification);

  auto cut = std::make_shared<cut_save_store>(store_, 0, landed, workflow_status::interrupted);
  hub updating{io_.get_executor(), registry, testing::options(cut, {}, silent())};
  EXPECT_THROW(await(updating.update_stored_run(workflow, "cut-update",
                                                testing::answer_for("", {{"status", "set by hand"}}))),
               checkpoint_error);
  const auto stored = await(store_->load("cut-update"));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->status, workflow_status::interrupted);
  EXPECT_EQ(stored->owner, "");
  EXPECT_EQ(stored->step, landed ? paused.step + 1 : paused.step);
  const auto done = await(plain.resume(workflow, "cut-update", landed ? resume_options{} : answer("the answer")));
  EXPECT_EQ(done.status, workflow_status::completed) << (done.first_error() ? done.first_error()->message : "");
}

INSTANTIATE_TEST_SUITE_P(outcomes, cut_save, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "landed" : "lost"; });

TEST_F(durable_run, interrupting_a_paused_run_leaves_it_paused) {
  const auto calls = counter("paused");
  // The interrupt arrives while "ask" asks its question, so it lands while
  // the pause is being saved: the save completes (store operations are not
  // cancellable) and the run stays paused. Many rounds: the interrupt meets
  // the save at different moments.
  std::mutex mutex;
  std::map<std::string, std::shared_future<workflow_handle>> handles;
  testing::durable_hooks hooks;
  hooks.on_question = [&] {
    std::shared_future<workflow_handle> handle;
    {
      std::lock_guard lock(mutex);
      for (const auto& [id, h] : handles) {
        if (h.wait_for(0s) == std::future_status::ready && !h.get().done()) handle = h;
      }
    }
    if (handle.valid()) handle.get().interrupt();
  };
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls, std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  for (int round = 0; round < 100 && !HasFailure(); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string id = "paused-" + std::to_string(round);
    std::promise<workflow_handle> started;
    {
      std::lock_guard lock(mutex);
      handles.clear();
      handles.emplace(id, started.get_future().share());
    }
    auto handle = h.start(workflow, durable_input(), with_id(id));
    started.set_value(handle);
    auto s = handle.wait();
    EXPECT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
    auto before = await(store_->load(id));
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, workflow_status::awaiting_clarification);
    EXPECT_EQ(before->owner, "");

    // Once paused, interrupt() changes nothing.
    handle.interrupt();
    EXPECT_EQ(handle.wait().status, workflow_status::awaiting_clarification);
    auto after = await(store_->load(id));
    ASSERT_TRUE(after);
    EXPECT_EQ(after->status, workflow_status::awaiting_clarification);
    EXPECT_EQ(after->step, before->step);
    EXPECT_EQ(after->fence, before->fence);
    EXPECT_EQ(after->state_json, before->state_json);

    s = await(h.resume(workflow, id, answer("the answer")));
    EXPECT_EQ(s.status, workflow_status::completed);
  }
  // Every round called every agent once ("ask" twice).
  auto total = read_calls(calls);
  const int rounds = total["one"];
  EXPECT_GT(rounds, 0);
  EXPECT_EQ(total, (calls_t{{"ask", 2 * rounds}, {"four", rounds}, {"one", rounds}, {"three", rounds}, {"two", rounds}}));
}

// ---------------------------------------------------------------- 5. changed definition

TEST_F(durable_run, a_changed_definition_is_refused_and_the_stored_run_kept) {
  const auto calls = counter("changed");
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls);
  auto original = testing::durable_workflow().compile(registry);
  auto renamed = testing::durable_workflow("confirm").compile(registry);  // the paused node "ask" renamed
  auto relimited = testing::durable_workflow().max_steps(50).compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto s = await(h.run(original, durable_input(), with_id("changed")));
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification);
  auto before = await(store_->load("changed"));
  ASSERT_TRUE(before);

  auto mismatch = refused_resume(h, renamed, "changed", answer("the answer"));
  EXPECT_EQ(mismatch.errc(), orchestrator_errc::workflow_mismatch) << mismatch.what();
  EXPECT_THAT(mismatch.what(), HasSubstr("nodes removed: ask"));
  EXPECT_THAT(mismatch.what(), HasSubstr("nodes added: confirm"));
  auto limits = refused_resume(h, relimited, "changed", answer("the answer"));
  EXPECT_EQ(limits.errc(), orchestrator_errc::workflow_mismatch) << limits.what();

  // A separate hub (another process would do the same) sees the run as it was.
  auto after = await(store_->load("changed"));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, workflow_status::awaiting_clarification);
  EXPECT_EQ(after->step, before->step);
  EXPECT_EQ(after->fence, before->fence);
  EXPECT_EQ(after->owner, before->owner);
  EXPECT_EQ(after->state_json, before->state_json);
  EXPECT_EQ(after->journal, before->journal);
  EXPECT_EQ(after->updated_at, before->updated_at);

  hub other{io_.get_executor(), registry, testing::options(stores::make_sqlite_checkpoint_store(db_), {}, silent())};
  s = await(other.resume(original, "changed", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed);
  ASSERT_TRUE(s.result);
  EXPECT_EQ(s.result->data.at("status"), "done with the answer");
  EXPECT_EQ(read_calls(calls), once_each);
}

// ---------------------------------------------------------------- 6. values that cannot be stored

// `levels` nested arrays around a number: nested(1) is [1].
json::value nested(int levels) {
  json::value v = 1;
  for (int i = 0; i < levels; ++i) {
    json::array a;
    a.push_back(std::move(v));
    v = std::move(a);
  }
  return v;
}

TEST_F(durable_run, an_input_that_cannot_be_stored_is_refused_naming_where) {
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, counter("refused"));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto refusal = [&](json::value input) -> std::string {
    try {
      auto s = await(h.run(workflow, std::move(input)));
      ADD_FAILURE() << "run accepted it and ended " << to_string(s.status);
    } catch (const orchestrator_error& e) {
      EXPECT_EQ(e.errc(), orchestrator_errc::invalid_input) << e.what();
      return e.what();
    }
    return {};
  };
  EXPECT_THAT(refusal(json::object{{"request", "x"},
                                   {"numbers", json::array{1, std::numeric_limits<double>::infinity()}}}),
              HasSubstr("/numbers/1"));
  EXPECT_THAT(refusal(json::object{{"n", std::numeric_limits<double>::quiet_NaN()}}), HasSubstr("/n"));
  EXPECT_THAT(refusal(json::parse(R"({"request": {"amount": 1e999}})")), HasSubstr("/request/amount"));
  EXPECT_THAT(refusal(json::value(-std::numeric_limits<double>::infinity())), HasSubstr("not finite"));
  EXPECT_THAT(refusal(json::object{{"deep", nested(69)}}), HasSubstr("nesting deeper than 64"));  // 70 levels
  EXPECT_THAT(refusal(json::object{{"deep", nested(64)}}), HasSubstr("/deep/0/0"));              // 65 levels
  EXPECT_TRUE(await(list_all(*store_)).empty()) << "nothing of a refused input was stored";
  EXPECT_TRUE(read_calls(counter("refused")).empty()) << "no agent ran";
}

// An input as deep as allowed is stored, and read back by another hub.
TEST_F(durable_run, a_deep_input_within_the_limit_survives_a_pause_and_a_resume_in_another_hub) {
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, counter("deep"));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};
  hub other{io_.get_executor(), registry, testing::options(stores::make_sqlite_checkpoint_store(db_), {}, silent())};

  for (int levels : {60, 64}) {
    SCOPED_TRACE(std::to_string(levels) + " levels");
    const std::string id = "deep-" + std::to_string(levels);
    json::value input = json::object{{"request", "deep"}, {"deep", nested(levels - 1)}};
    auto s = await(h.run(workflow, input, with_id(id)));
    ASSERT_EQ(s.status, workflow_status::awaiting_clarification)
        << (s.first_error() ? s.first_error()->message : "");
    auto found = await(other.find(id));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->input, input);
    s = await(other.resume(workflow, id, answer("the answer")));
    EXPECT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
    EXPECT_EQ(s.input, input);
    found = await(h.find(id));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->status, workflow_status::completed);
    EXPECT_EQ(found->input, input);
  }
}

// An agent's answer that cannot be stored fails its step, naming the agent
// and where; what is stored stays JSON any reader accepts. Data as deep as
// allowed is stored and read back.
TEST_F(durable_run, an_agent_answer_that_cannot_be_stored_fails_the_step_and_the_state_stays_readable) {
  testing::durable_hooks hooks;
  hooks.two_answer = [](agents::agent_context& c) {
    const auto kind = std::string(c.input.at("case").as_string());
    auto e = testing::make_envelope({{"status", "two"}}, 0.9, "Two.");
    if (kind == "infinite data") e.data["score"] = std::numeric_limits<double>::infinity();
    if (kind == "huge data") e.data["score"] = json::parse("1e999");
    if (kind == "nan confidence") e.confidence = std::numeric_limits<double>::quiet_NaN();
    if (kind == "too deep") e.data["extra"] = nested(64);  // data is level 1: 65 levels
    if (kind == "deepest") e.data["extra"] = nested(63);   // 64 levels: allowed
    return e;
  };
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, counter("answers"), std::move(hooks));
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};
  hub other{io_.get_executor(), registry, testing::options(stores::make_sqlite_checkpoint_store(db_), {}, silent())};

  struct bad_case {
    const char* kind;
    const char* names;
  };
  for (const auto& c : {bad_case{"infinite data", "/score"}, bad_case{"huge data", "/score"},
                        bad_case{"nan confidence", "confidence is not finite"},
                        bad_case{"too deep", "nesting deeper than 64"}}) {
    SCOPED_TRACE(c.kind);
    const std::string id = std::string("bad-") + c.kind;
    auto s = await(h.run(workflow, json::object{{"case", c.kind}}, with_id(id)));
    EXPECT_EQ(s.status, workflow_status::failed);
    ASSERT_TRUE(s.first_error());
    EXPECT_EQ(s.first_error()->type, "invalid_envelope");
    EXPECT_THAT(s.first_error()->message, HasSubstr("agent 'two'"));
    EXPECT_THAT(s.first_error()->message, HasSubstr(c.names));

    auto cp = await(store_->load(id));
    ASSERT_TRUE(cp);
    EXPECT_EQ(cp->status, workflow_status::failed);
    EXPECT_NO_THROW(json::parse(cp->state_json)) << cp->state_json;
    // Every stored text is JSON holding only finite numbers (Boost.JSON
    // would write an infinity as 1e99999, which reads back as infinity).
    for (const auto& text : [&] {
           auto all = cp->journal;
           all.push_back(cp->state_json);
           return all;
         }()) {
      json::value parsed;
      ASSERT_NO_THROW(parsed = json::parse(text, {}, protocol::checkpoint_parse_options())) << text;
      EXPECT_EQ(protocol::check_untrusted_value(parsed, protocol::max_checkpoint_depth), std::nullopt) << text;
    }
    auto found = await(other.find(id));
    ASSERT_TRUE(found);
    EXPECT_EQ(found->status, workflow_status::failed);
    EXPECT_EQ(found->history("one").size(), 1u);
    EXPECT_TRUE(found->history("two").empty());
    ASSERT_TRUE(found->first_error());
    EXPECT_EQ(found->first_error()->type, "invalid_envelope");
  }

  auto s = await(h.run(workflow, json::object{{"case", "deepest"}}, with_id("deepest")));
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification) << (s.first_error() ? s.first_error()->message : "");
  auto found = await(other.find("deepest"));
  ASSERT_TRUE(found);
  ASSERT_TRUE(found->latest("two"));
  EXPECT_EQ(found->latest("two")->data.at("extra"), nested(63));
  s = await(other.resume(workflow, "deepest", answer("the answer")));
  EXPECT_EQ(s.status, workflow_status::completed) << (s.first_error() ? s.first_error()->message : "");
}

}  // namespace
}  // namespace switchboard::orchestrator

namespace switchboard::orchestrator {
namespace {

using namespace durable_testing;

// The head and the journal records are written out by hand (not built as
// JSON objects): each must be the very text serializing its own parse
// gives, with every field, at a pause (a question in the head) and at the
// end (a result in it).
void expect_canonical_head(const checkpoint& cp) {
  ASSERT_FALSE(cp.journal.empty());
  for (const auto& record : cp.journal) EXPECT_EQ(record, boost::json::serialize(boost::json::parse(record)));
  EXPECT_TRUE(boost::json::parse(cp.journal.front()).as_object().contains("input"));
  const auto head = boost::json::parse(cp.state_json).as_object();
  EXPECT_EQ(cp.state_json, boost::json::serialize(head));
  for (const char* key : {"format", "id", "workflow", "status", "step", "next_node", "starts", "clarification",
                          "approval", "result", "definition"}) {
    EXPECT_TRUE(head.contains(key)) << key << " missing from " << cp.state_json;
  }
  EXPECT_EQ(head.at("id").as_string(), cp.workflow_id);
  EXPECT_EQ(head.at("step").as_int64(), cp.step);
  EXPECT_FALSE(head.at("definition").at("nodes").as_array().empty());
}

TEST_F(durable_run, the_stored_head_and_records_are_canonical_json_at_a_pause_and_at_the_end) {
  const auto calls = counter("head");
  agents::agent_registry registry(testing::test_schemas());
  testing::register_durable_agents(registry, calls, {});
  auto workflow = testing::durable_workflow().compile(registry);
  hub h{io_.get_executor(), registry, hub_opts()};

  auto s = await(h.run(workflow, durable_input(), with_id("head \"quoted\"")));
  ASSERT_EQ(s.status, workflow_status::awaiting_clarification);
  auto paused = await(store_->load("head \"quoted\""));
  ASSERT_TRUE(paused);
  expect_canonical_head(*paused);
  EXPECT_FALSE(boost::json::parse(paused->state_json).at("clarification").is_null());

  s = await(h.resume(workflow, "head \"quoted\"", answer("the answer")));
  ASSERT_EQ(s.status, workflow_status::completed);
  auto done = await(store_->load("head \"quoted\""));
  ASSERT_TRUE(done);
  expect_canonical_head(*done);
  EXPECT_FALSE(boost::json::parse(done->state_json).at("result").is_null());
}

}  // namespace
}  // namespace switchboard::orchestrator
