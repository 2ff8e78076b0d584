// catalog.hpp: assistants, threads and runs written through to a journal in
// the event feed and read back by another catalog over the same feed, as a
// restarted server reads them: each record's newest version, deleted
// threads gone with their runs, entries that are not JSON skipped.
#include "catalog.hpp"
#include "catalog_records.hpp"

#include "server_test_support.hpp"

#include <switchboard/orchestrator/event_feed.hpp>

#include <gtest/gtest.h>

#include <set>

namespace switchboard::server {
namespace {

using testing::await;
namespace json = boost::json;
namespace orch = switchboard::orchestrator;

constexpr const char* journal = "switchboard.serve.catalog";

thread_record a_thread(std::string id) {
  thread_record t;
  t.thread_id = std::move(id);
  t.created_at = t.updated_at = now_iso8601();
  t.metadata = {{"owner", "ana"}};
  return t;
}

run_record a_run(std::string id, std::string thread, std::string created_at) {
  run_record r;
  r.run_id = std::move(id);
  r.thread_id = std::move(thread);
  r.graph_id = "family_scheduling";
  r.created_at = r.updated_at = std::move(created_at);
  r.kwargs = {{"input", json::object{{"request", "hello"}}}};
  return r;
}

class catalog_test : public ::testing::Test {
 protected:
  // A second catalog over the same feed, loaded: what a restart reads.
  std::unique_ptr<catalog> reloaded() {
    auto c = std::make_unique<catalog>(feed_);
    await(c->load());
    return c;
  }
  void append_raw(const std::string& text) { await(feed_->append(journal, text)); }

  std::shared_ptr<orch::event_feed> feed_ = orch::make_in_memory_event_feed();
  catalog records_{feed_};
};

TEST_F(catalog_test, records_saved_are_read_back_by_another_catalog) {
  assistant_record a;
  a.assistant_id = "a0000000-0000-4000-8000-000000000001";
  a.graph_id = "family_scheduling";
  a.name = "planner";
  a.description = "plans";
  a.config = {{"recursion_limit", 5}};
  a.metadata = {{"team", "home"}};
  a.created_at = a.updated_at = now_iso8601();
  await(records_.save(a));

  auto t = a_thread("70000000-0000-4000-8000-000000000001");
  t.status = "interrupted";
  t.graph_id = "family_scheduling";
  t.workflow_run = "wf-1";
  t.values = json::object{{"step", 3}};
  t.interrupts = {{"task-1", json::array{json::object{{"id", "i-1"}, {"value", "When?"}}}}};
  await(records_.save(t));

  auto r = a_run("01900000-0000-7000-8000-000000000001", t.thread_id, now_iso8601());
  r.status = "success";
  r.workflow_run = "wf-1";
  r.result = json::object{{"step", 3}};
  r.metadata = {{"source", "test"}};
  await(records_.save(r));

  const auto back = reloaded();
  const auto a2 = back->assistant(a.assistant_id);
  ASSERT_TRUE(a2);
  EXPECT_EQ(a2->graph_id, "family_scheduling");
  EXPECT_EQ(a2->name, "planner");
  EXPECT_EQ(a2->description, "plans");
  EXPECT_EQ(a2->config, a.config);
  EXPECT_EQ(a2->metadata, a.metadata);
  EXPECT_FALSE(a2->system);

  const auto t2 = back->thread(t.thread_id);
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->status, "interrupted");
  EXPECT_EQ(t2->graph_id, "family_scheduling");
  EXPECT_EQ(t2->workflow_run, "wf-1");
  EXPECT_EQ(t2->metadata, t.metadata);
  EXPECT_EQ(t2->values, t.values);
  EXPECT_EQ(t2->interrupts, t.interrupts);
  EXPECT_EQ(t2->created_at, t.created_at);

  const auto r2 = back->run(r.run_id);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->thread_id, t.thread_id);
  EXPECT_EQ(r2->status, "success");
  EXPECT_EQ(r2->workflow_run, "wf-1");
  EXPECT_EQ(r2->kwargs, r.kwargs);
  EXPECT_EQ(r2->result, r.result);
  EXPECT_EQ(r2->metadata, r.metadata);
  EXPECT_EQ(r2->multitask_strategy, "enqueue");
  ASSERT_EQ(back->runs_of(t.thread_id).size(), 1u);
}

TEST_F(catalog_test, the_newest_version_of_a_record_wins) {
  const auto id = std::string("70000000-0000-4000-8000-000000000002");
  await(records_.save(a_thread(id)));
  for (const char* status : {"busy", "interrupted"}) {
    const auto changed = records_.change_thread(id, [&](thread_record& t) {
      t.status = status;
      return true;
    });
    ASSERT_TRUE(changed);
    EXPECT_EQ(records_.thread(id)->status, status);  // in memory at once
    await(records_.write(*changed));
  }
  EXPECT_EQ(records_.thread(id)->version, 3);
  const auto back = reloaded();
  ASSERT_TRUE(back->thread(id));
  EXPECT_EQ(back->thread(id)->status, "interrupted");
  EXPECT_EQ(back->thread(id)->version, 3);

  // The next save after a reload goes on from the version read back.
  await(back->save(*back->thread(id)));
  EXPECT_EQ(back->thread(id)->version, 4);
}

TEST_F(catalog_test, a_newer_version_appended_before_an_older_one_still_wins) {
  // Appends of one record may land out of order (saved from two threads).
  const auto id = std::string("70000000-0000-4000-8000-000000000003");
  json::object newer{{"thread_id", id}, {"status", "idle"}, {"version", 2}};
  json::object older{{"thread_id", id}, {"status", "busy"}, {"version", 1}};
  append_raw(json::serialize(json::object{{"kind", "thread"}, {"record", newer}}));
  append_raw(json::serialize(json::object{{"kind", "thread"}, {"record", older}}));
  const auto back = reloaded();
  ASSERT_TRUE(back->thread(id));
  EXPECT_EQ(back->thread(id)->status, "idle");
}

TEST_F(catalog_test, a_deleted_thread_is_gone_with_its_runs) {
  const auto kept = a_thread("70000000-0000-4000-8000-000000000004");
  const auto gone = a_thread("70000000-0000-4000-8000-000000000005");
  await(records_.save(kept));
  await(records_.save(gone));
  await(records_.save(a_run("01900000-0000-7000-8000-000000000010", gone.thread_id, "2026-01-01T00:00:00.001Z")));
  await(records_.save(a_run("01900000-0000-7000-8000-000000000011", gone.thread_id, "2026-01-01T00:00:00.002Z")));
  await(records_.save(a_run("01900000-0000-7000-8000-000000000012", kept.thread_id, "2026-01-01T00:00:00.003Z")));

  await(records_.erase_thread(gone.thread_id));
  EXPECT_FALSE(records_.thread(gone.thread_id));
  EXPECT_TRUE(records_.runs_of(gone.thread_id).empty());
  EXPECT_FALSE(records_.run("01900000-0000-7000-8000-000000000010"));

  const auto back = reloaded();
  EXPECT_FALSE(back->thread(gone.thread_id));
  EXPECT_TRUE(back->runs_of(gone.thread_id).empty());
  EXPECT_FALSE(back->run("01900000-0000-7000-8000-000000000010"));
  EXPECT_FALSE(back->run("01900000-0000-7000-8000-000000000011"));
  ASSERT_TRUE(back->thread(kept.thread_id));
  ASSERT_EQ(back->runs_of(kept.thread_id).size(), 1u);
  EXPECT_EQ(back->runs().size(), 1u);
}

TEST_F(catalog_test, a_run_saved_after_its_thread_was_deleted_is_not_read_back) {
  // A run's last write may land after its thread's deletion; the run goes
  // with the thread all the same.
  const auto t = a_thread("70000000-0000-4000-8000-000000000006");
  await(records_.save(t));
  await(records_.erase_thread(t.thread_id));
  await(records_.save(a_run("01900000-0000-7000-8000-000000000020", t.thread_id, now_iso8601())));
  const auto back = reloaded();
  EXPECT_FALSE(back->thread(t.thread_id));
  EXPECT_FALSE(back->run("01900000-0000-7000-8000-000000000020"));
}

TEST_F(catalog_test, a_deleted_run_is_gone) {
  const auto t = a_thread("70000000-0000-4000-8000-000000000007");
  await(records_.save(t));
  await(records_.save(a_run("01900000-0000-7000-8000-000000000030", t.thread_id, now_iso8601())));
  await(records_.erase_run("01900000-0000-7000-8000-000000000030"));
  EXPECT_FALSE(records_.run("01900000-0000-7000-8000-000000000030"));
  EXPECT_TRUE(records_.runs_of(t.thread_id).empty());
  const auto back = reloaded();
  EXPECT_FALSE(back->run("01900000-0000-7000-8000-000000000030"));
  EXPECT_TRUE(back->thread(t.thread_id));
}

TEST_F(catalog_test, journal_entries_that_are_not_json_records_are_skipped) {
  append_raw("this is not JSON {");
  append_raw("[1, 2, 3]");
  append_raw(R"({"kind": "spaceship", "record": {}})");
  const auto t = a_thread("70000000-0000-4000-8000-000000000008");
  await(records_.save(t));
  append_raw("\xff\xfe");
  const auto back = reloaded();
  ASSERT_TRUE(back->thread(t.thread_id));
  EXPECT_EQ(back->threads().size(), 1u);
  EXPECT_TRUE(back->runs().empty());
}

TEST_F(catalog_test, runs_of_a_thread_come_oldest_first) {
  const auto t = a_thread("70000000-0000-4000-8000-000000000009");
  await(records_.save(t));
  // Saved in another order than made; ids chosen so that the map order is
  // not the creation order.
  await(records_.save(a_run("01900000-0000-7000-8000-00000000003c", t.thread_id, "2026-01-01T00:00:00.001Z")));
  await(records_.save(a_run("01900000-0000-7000-8000-00000000003a", t.thread_id, "2026-01-01T00:00:00.003Z")));
  await(records_.save(a_run("01900000-0000-7000-8000-00000000003b", t.thread_id, "2026-01-01T00:00:00.002Z")));
  const auto runs = reloaded()->runs_of(t.thread_id);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].run_id, "01900000-0000-7000-8000-00000000003c");
  EXPECT_EQ(runs[1].run_id, "01900000-0000-7000-8000-00000000003b");
  EXPECT_EQ(runs[2].run_id, "01900000-0000-7000-8000-00000000003a");
}

// A thread's runs are found by its id alone: not those of a thread whose id
// begins with it or sorts next to it, here and after a restart, and a run
// erased is gone from its thread's list only.
TEST_F(catalog_test, runs_of_a_thread_are_its_own_and_no_others) {
  const auto a = a_thread("thread");
  const auto longer = a_thread("thread2");
  const auto next = a_thread("threae");
  for (const auto* t : {&a, &longer, &next}) await(records_.save(*t));
  await(records_.save(a_run("run-1", a.thread_id, "2026-01-01T00:00:00.001Z")));
  await(records_.save(a_run("run-2", longer.thread_id, "2026-01-01T00:00:00.002Z")));
  await(records_.save(a_run("run-3", a.thread_id, "2026-01-01T00:00:00.003Z")));
  await(records_.save(a_run("run-4", next.thread_id, "2026-01-01T00:00:00.004Z")));
  const auto ids = [](const std::vector<run_record>& runs) {
    std::vector<std::string> out;
    for (const auto& r : runs) out.push_back(r.run_id + "@" + r.thread_id);
    return out;
  };
  const std::vector<std::string> of_a{"run-1@thread", "run-3@thread"};
  EXPECT_EQ(ids(records_.runs_of("thread")), of_a);
  EXPECT_EQ(ids(records_.runs_of("thread2")), std::vector<std::string>{"run-2@thread2"});
  EXPECT_EQ(ids(records_.runs_of("threae")), std::vector<std::string>{"run-4@threae"});
  EXPECT_TRUE(records_.runs_of("threa").empty());
  EXPECT_EQ(ids(reloaded()->runs_of("thread")), of_a);

  await(records_.erase_run("run-1"));
  EXPECT_EQ(ids(records_.runs_of("thread")), std::vector<std::string>{"run-3@thread"});
  EXPECT_EQ(ids(records_.runs_of("thread2")), std::vector<std::string>{"run-2@thread2"});
  await(records_.erase_thread("thread"));
  EXPECT_TRUE(records_.runs_of("thread").empty());
  EXPECT_EQ(ids(reloaded()->runs_of("thread2")), std::vector<std::string>{"run-2@thread2"});
}

// The sweep that offers threads with work to the run queue reads each
// run's status as it changes, here and from the journal.
TEST_F(catalog_test, threads_with_a_run_pending_or_running_are_the_threads_with_work) {
  const auto waiting = a_thread("70000000-0000-4000-8000-00000000000a");
  const auto idle = a_thread("70000000-0000-4000-8000-00000000000b");
  await(records_.save(waiting));
  await(records_.save(idle));
  auto pending = a_run("01900000-0000-7000-8000-000000000040", waiting.thread_id, "2026-01-01T00:00:00.001Z");
  pending.status = "pending";
  auto ended = a_run("01900000-0000-7000-8000-000000000041", idle.thread_id, "2026-01-01T00:00:00.002Z");
  ended.status = "success";
  await(records_.save(pending));
  await(records_.save(ended));
  EXPECT_EQ(records_.threads_with_work(), std::set<std::string>{waiting.thread_id});
  EXPECT_EQ(reloaded()->threads_with_work(), std::set<std::string>{waiting.thread_id});

  const auto finished = records_.change_run(pending.run_id, [](run_record& r) {
    r.status = "success";
    return true;
  });
  ASSERT_TRUE(finished);
  EXPECT_TRUE(records_.threads_with_work().empty()) << "changed here";
  await(records_.write(*finished));
  EXPECT_TRUE(reloaded()->threads_with_work().empty()) << "read from the journal";
}

TEST_F(catalog_test, a_change_of_an_unknown_or_unchanged_record_writes_nothing) {
  EXPECT_FALSE(records_.change_thread("70000000-0000-4000-8000-00000000000a", [](thread_record&) { return true; }));
  EXPECT_FALSE(records_.change_run("01900000-0000-7000-8000-0000000000ff", [](run_record&) { return true; }));
  const auto t = a_thread("70000000-0000-4000-8000-00000000000b");
  await(records_.save(t));
  EXPECT_FALSE(records_.change_thread(t.thread_id, [](thread_record& changed) {
    changed.status = "error";
    return false;  // refused: nothing applies
  }));
  EXPECT_EQ(records_.thread(t.thread_id)->status, "idle");
  EXPECT_EQ(records_.thread(t.thread_id)->version, 1);
  EXPECT_EQ(await(feed_->read(journal, 0, 0)).size(), 1u);
}

TEST_F(catalog_test, system_assistants_are_not_journaled) {
  assistant_record a;
  a.assistant_id = "b0000000-0000-4000-8000-000000000001";
  a.graph_id = a.name = "g";
  records_.add_system_assistant(a);
  ASSERT_TRUE(records_.assistant(a.assistant_id));
  EXPECT_TRUE(records_.assistant(a.assistant_id)->system);
  EXPECT_FALSE(reloaded()->assistant(a.assistant_id));
}

TEST_F(catalog_test, a_change_is_kept_whole_and_versioned) {
  auto t = a_thread("70000000-0000-4000-8000-00000000000c");
  t.values = json::object{{"outputs", json::object{{"ask", json::object{{"confidence", 0.25}}}}}};
  await(records_.save(t));
  const auto changed = records_.change_thread(t.thread_id, [](thread_record& r) {
    r.status = "interrupted";
    r.interrupts["task-1"] = json::array{json::object{{"id", "i-1"}, {"value", "When?"}}};
    return true;
  });
  ASSERT_TRUE(changed);
  const auto kept = records_.thread(t.thread_id);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->version, 2);
  EXPECT_EQ(kept->status, "interrupted");
  EXPECT_EQ(kept->values, t.values);
  EXPECT_EQ(kept->metadata, t.metadata);
  EXPECT_EQ(json::value(kept->interrupts), json::value(changed->interrupts));
  EXPECT_EQ(kept->interrupts.at("task-1").at(0).at("value"), "When?");
}

// A paused run's end as run_engine::finish writes it: the run's result and
// the thread's values are the same values, the thread's interrupts its
// values' `__interrupt__`. Kept apart and shared in memory, each reads back
// whole, here and after a restart, and the journal holds whole records.
TEST_F(catalog_test, a_paused_runs_end_reads_back_whole_here_and_after_a_restart) {
  const json::array asked{json::object{{"id", "i-1"}, {"value", json::object{{"question", "When?"}}}}};
  const json::value values = json::object{{"step", 1}, {"status", "awaiting_clarification"}, {"__interrupt__", asked}};
  auto t = a_thread("70000000-0000-4000-8000-00000000000d");
  await(records_.save(t));
  const auto r = a_run("01900000-0000-7000-8000-00000000000d", t.thread_id, now_iso8601());
  await(records_.save(r));

  const auto run_end = records_.change_run(r.run_id, [&](run_record& changed) {
    changed.status = "success";
    changed.result = values;
    return true;
  });
  const auto thread_end = records_.change_thread(t.thread_id, [&](thread_record& changed) {
    changed.status = "interrupted";
    changed.values = values;
    changed.interrupts["task-1"] = asked;
    return true;
  });
  ASSERT_TRUE(run_end && thread_end);
  await(records_.write(run_end, thread_end));
  // A later change of the thread's status alone keeps its values.
  await(records_.write(*records_.change_thread(t.thread_id, [](thread_record& changed) {
    changed.metadata["seen"] = true;
    return true;
  })));

  const auto back = reloaded();
  for (const catalog* c : {&records_, back.get()}) {
    const auto thread = c->thread(t.thread_id);
    ASSERT_TRUE(thread);
    EXPECT_EQ(thread->values, values);
    EXPECT_EQ(json::value(thread->interrupts), (json::object{{"task-1", asked}}));
    EXPECT_EQ(thread->status, "interrupted");
    EXPECT_EQ(thread->metadata.at("seen"), true);
    EXPECT_EQ(thread->version, 3);
    const auto run = c->run(r.run_id);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->result, values);
    EXPECT_EQ(run->status, "success");
    EXPECT_EQ(run->version, 2);
  }
  // Another server reads the journal: every entry is the whole record.
  const auto entries = await(feed_->read(journal, 0, 100));
  const auto last = json::parse(entries.back().event).as_object().at("record").as_object();
  EXPECT_EQ(last.at("values"), values);
  EXPECT_EQ(last.at("interrupts"), (json::object{{"task-1", asked}}));
  EXPECT_FALSE(last.contains("interrupts_task"));
}

// Interrupts that are not the values' `__interrupt__` under one task are
// kept as they are.
TEST_F(catalog_test, interrupts_other_than_the_values_own_are_kept_as_they_are) {
  const json::array asked{json::object{{"id", "i-1"}, {"value", "When?"}}};
  const json::array other{json::object{{"id", "i-2"}, {"value", "Where?"}}};
  const std::vector<std::pair<json::value, json::object>> cases{
      {json::object{{"__interrupt__", asked}}, json::object{{"task-1", other}}},
      {json::object{{"__interrupt__", asked}}, json::object{{"task-1", asked}, {"task-2", other}}},
      {json::object{{"step", 2}}, json::object{{"task-1", asked}}},
      {nullptr, json::object{{"task-1", asked}}},
      {json::object{{"__interrupt__", asked}}, json::object{}},
  };
  int n = 0;
  for (const auto& [values, interrupts] : cases) {
    auto t = a_thread("70000000-0000-4000-8000-0000000001" + std::to_string(10 + n++));
    t.values = values;
    t.interrupts = interrupts;
    await(records_.save(t));
    const auto back = reloaded();
    for (const catalog* c : {&records_, back.get()}) {
      const auto kept = c->thread(t.thread_id);
      ASSERT_TRUE(kept);
      EXPECT_EQ(kept->values, values);
      EXPECT_EQ(json::value(kept->interrupts), json::value(interrupts)) << json::serialize(values);
    }
  }
}

// The kept text leaves out what the kept record holds apart (its id is the
// catalog's key), and the record comes back whole from the two.
TEST(catalog_kept_form, holds_an_id_a_version_a_thread_and_a_status_once_and_unpacks_whole) {
  auto r = a_run("01900000-0000-7000-8000-00000000000e", "70000000-0000-4000-8000-00000000000e", now_iso8601());
  r.assistant_id = "6c224c4e-e9cb-5438-88c4-24b80d0ee26b";
  r.status = "running";
  r.workflow_run = "w-1";
  r.result = json::object{{"step", 1}};
  r.version = 4;
  const auto run = kept(r);
  const auto run_text = json::parse(run.json).as_object();
  for (const char* apart : {"run_id", "thread_id", "status", "version", "result"})
    EXPECT_FALSE(run_text.contains(apart)) << apart << " in " << run.json;
  EXPECT_EQ(run.thread_id, r.thread_id);
  EXPECT_EQ(run.status, r.status);
  EXPECT_EQ(json::value(to_json(unpack_run(run, r.run_id))), json::value(to_json(r)));

  auto t = a_thread("70000000-0000-4000-8000-00000000000e");
  t.status = "busy";
  t.values = json::object{{"step", 1}};
  t.version = 7;
  const auto thread = kept(t);
  const auto thread_text = json::parse(thread.json).as_object();
  for (const char* apart : {"thread_id", "version", "values"})
    EXPECT_FALSE(thread_text.contains(apart)) << apart << " in " << thread.json;
  EXPECT_EQ(thread_text.at("status"), "busy");  // a thread's status is in its text
  EXPECT_EQ(json::value(to_json(unpack_thread(thread, t.thread_id))), json::value(to_json(t)));
}

TEST(catalog_without_journal, keeps_records_and_writes_nothing_to_the_feed) {
  auto feed = orch::make_in_memory_event_feed();
  catalog records(feed, false);
  auto t = a_thread("70000000-0000-4000-8000-00000000000d");
  await(records.save(t));
  await(records.save(a_run("01900000-0000-7000-8000-00000000000d", t.thread_id, now_iso8601())));
  const auto changed = records.change_thread(t.thread_id, [](thread_record& r) {
    r.status = "busy";
    return true;
  });
  ASSERT_TRUE(changed);
  await(records.write(*changed));
  await(records.erase_run("01900000-0000-7000-8000-00000000000d"));
  EXPECT_EQ(records.thread(t.thread_id)->status, "busy");
  EXPECT_TRUE(records.runs_of(t.thread_id).empty());
  EXPECT_TRUE(await(feed->read(journal, 0, 0)).empty());
}

// A feed whose appends fail while `failing` says so: before writing
// (nothing kept) or after (kept, the outcome lost with the connection).
class failing_feed final : public orch::event_feed {
 public:
  enum class mode { none, before_writing, after_writing };
  mode failing = mode::none;

  boost::asio::awaitable<std::int64_t> append(std::string id, std::string event) override {
    if (failing == mode::before_writing) throw std::runtime_error("the database went away");
    const auto position = co_await inner_->append(std::move(id), std::move(event));
    if (failing == mode::after_writing) throw std::runtime_error("the connection was cut before the commit's answer");
    co_return position;
  }
  boost::asio::awaitable<std::int64_t> append_all(std::string id, std::vector<std::string> events) override {
    if (failing == mode::before_writing) throw std::runtime_error("the database went away");
    const auto position = co_await inner_->append_all(std::move(id), std::move(events));
    if (failing == mode::after_writing) throw std::runtime_error("the connection was cut before the commit's answer");
    co_return position;
  }
  boost::asio::awaitable<std::vector<orch::feed_event>> read(std::string id, std::int64_t after,
                                                             std::size_t limit) override {
    co_return co_await inner_->read(std::move(id), after, limit);
  }
  boost::asio::awaitable<std::vector<orch::feed_event>> wait(std::string id, std::int64_t after, std::size_t limit,
                                                             std::chrono::milliseconds timeout) override {
    co_return co_await inner_->wait(std::move(id), after, limit, timeout);
  }
  boost::asio::awaitable<std::size_t> erase(std::string id) override { co_return co_await inner_->erase(std::move(id)); }

 private:
  std::shared_ptr<orch::event_feed> inner_ = orch::make_in_memory_event_feed();
};

// What serve does to post a run: keep it, mark its thread busy, write both.
struct posting {
  run_record run;
  std::optional<thread_record> before, busy;
};
posting post_run(catalog& records, const std::string& thread_id, const std::string& run_id) {
  posting p;
  p.run = records.keep(a_run(run_id, thread_id, now_iso8601()));
  p.before = records.thread(thread_id);
  p.busy = records.change_thread(thread_id, [](thread_record& t) {
    t.status = "busy";
    return true;
  });
  return p;
}

class catalog_failing_writes : public ::testing::Test {
 protected:
  std::shared_ptr<failing_feed> feed_ = std::make_shared<failing_feed>();
  catalog records_{feed_};
  const std::string thread_id = "70000000-0000-4000-8000-0000000000f1";
  const std::string run_id = "01900000-0000-7000-8000-0000000000f1";
};

TEST_F(catalog_failing_writes, a_run_whose_write_failed_is_forgotten_and_its_thread_put_back) {
  await(records_.save(a_thread(thread_id)));
  const auto p = post_run(records_, thread_id, run_id);
  feed_->failing = failing_feed::mode::before_writing;
  EXPECT_THROW(await(records_.write(p.run, p.busy)), std::runtime_error);
  EXPECT_TRUE(records_.forget_unwritten(p.run, p.busy, p.before));
  EXPECT_FALSE(records_.run(run_id));
  EXPECT_EQ(records_.thread(thread_id)->status, "idle");
  EXPECT_EQ(records_.thread(thread_id)->version, 1);
  feed_->failing = failing_feed::mode::none;
  await(records_.sync());
  EXPECT_FALSE(records_.run(run_id)) << "nothing was journaled";
  EXPECT_EQ(records_.thread(thread_id)->status, "idle");
}

TEST_F(catalog_failing_writes, a_run_whose_write_landed_though_it_failed_is_read_back) {
  await(records_.save(a_thread(thread_id)));
  const auto p = post_run(records_, thread_id, run_id);
  feed_->failing = failing_feed::mode::after_writing;
  EXPECT_THROW(await(records_.write(p.run, p.busy)), std::runtime_error);
  EXPECT_TRUE(records_.forget_unwritten(p.run, p.busy, p.before));
  EXPECT_FALSE(records_.run(run_id));
  feed_->failing = failing_feed::mode::none;
  await(records_.sync());
  ASSERT_TRUE(records_.run(run_id)) << "the journal has it: every server reads it";
  EXPECT_EQ(records_.thread(thread_id)->status, "busy");
}

TEST_F(catalog_failing_writes, a_run_read_back_before_it_is_forgotten_stays) {
  await(records_.save(a_thread(thread_id)));
  const auto p = post_run(records_, thread_id, run_id);
  feed_->failing = failing_feed::mode::after_writing;
  EXPECT_THROW(await(records_.write(p.run, p.busy)), std::runtime_error);
  feed_->failing = failing_feed::mode::none;
  await(records_.sync());  // a follower read the landed entries first
  EXPECT_FALSE(records_.forget_unwritten(p.run, p.busy, p.before));
  ASSERT_TRUE(records_.run(run_id));
  EXPECT_EQ(records_.thread(thread_id)->status, "busy");
}

TEST_F(catalog_failing_writes, a_newer_version_kept_meanwhile_stays) {
  await(records_.save(a_thread(thread_id)));
  const auto p = post_run(records_, thread_id, run_id);
  feed_->failing = failing_feed::mode::before_writing;
  EXPECT_THROW(await(records_.write(p.run, p.busy)), std::runtime_error);
  const auto later = records_.change_thread(thread_id, [](thread_record& t) {
    t.status = "interrupted";
    return true;
  });
  ASSERT_TRUE(later);
  EXPECT_TRUE(records_.forget_unwritten(p.run, p.busy, p.before));
  EXPECT_EQ(records_.thread(thread_id)->status, "interrupted");
}

TEST_F(catalog_failing_writes, a_thread_whose_save_failed_is_not_kept) {
  feed_->failing = failing_feed::mode::before_writing;
  EXPECT_THROW(await(records_.save(a_thread(thread_id))), std::runtime_error);
  EXPECT_FALSE(records_.thread(thread_id));
  // and a change of one that exists goes back to what was journaled
  feed_->failing = failing_feed::mode::none;
  await(records_.save(a_thread(thread_id)));
  feed_->failing = failing_feed::mode::before_writing;
  auto renamed = a_thread(thread_id);
  renamed.metadata = {{"owner", "sam"}};
  EXPECT_THROW(await(records_.save(renamed)), std::runtime_error);
  EXPECT_EQ(records_.thread(thread_id)->metadata, (json::object{{"owner", "ana"}}));
}

}  // namespace
}  // namespace switchboard::server
