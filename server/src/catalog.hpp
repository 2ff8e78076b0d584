// What the API knows beyond the hub's runs: assistants, threads and the
// API's runs (a LangGraph run is one start or resume of a hub run), kept in
// memory and written through to a journal in the store's event feed, so a
// restarted server (or one that was killed) finds them all again.
//
// Each change appends the whole record with a version one higher; reading
// the journal back keeps each record's highest version (of two equal
// versions, the later in the journal). Appends of different records may
// interleave freely.
//
// Servers sharing a store (PostgreSQL) each keep a catalog and follow the
// same journal: sync() reads what the others appended since the last read,
// so every server converges on the same records.
//
// Thread-safety: every member function may be called from any thread.
#pragma once

#include <switchboard/orchestrator/event_feed.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::server {

// "2026-11-27T10:47:06.123Z": the form of every time the catalog keeps
// (two of them compare as text as they do as times).
std::string iso8601(std::chrono::system_clock::time_point at);
std::string now_iso8601();

struct assistant_record {
  std::string assistant_id;
  std::string graph_id;
  std::string name;
  std::string description;
  boost::json::object config;
  boost::json::object context;
  boost::json::object metadata;
  std::string created_at;
  std::string updated_at;
  bool system = false;  // the graph's own assistant (not journaled)
  std::int64_t version = 0;
};

struct thread_record {
  std::string thread_id;
  std::string created_at;
  std::string updated_at;
  boost::json::object metadata;
  std::string status = "idle";        // idle | busy | interrupted | error
  std::string graph_id;               // the workflow of its runs ("" before the first)
  std::string workflow_run;           // the hub run its state is ("" before the first)
  boost::json::value values = nullptr;
  boost::json::object interrupts;     // task id -> [{id, value}]
  std::int64_t version = 0;
};

struct run_record {
  std::string run_id;
  std::string thread_id;
  std::string assistant_id;
  std::string graph_id;
  std::string status = "pending";     // pending | running | success | error | timeout | interrupted
  std::string created_at;
  std::string updated_at;
  boost::json::object metadata;
  boost::json::object kwargs;         // input, command, stream_mode, config, ...
  std::string multitask_strategy = "enqueue";
  std::string workflow_run;           // the hub run it starts or resumes
  boost::json::value result = nullptr;  // the last values, once it ended
  std::int64_t version = 0;
};

// A thread or a run as the catalog keeps it: the JSON text of its record,
// about a third of the memory of its Boost.JSON tree. Most records are kept
// far more than they are read (parked and finished runs).
//
// The largest part, a thread's values or a run's result, is kept apart:
// a run that ended and its thread hold the same values, and so do two
// versions of a thread whose status alone changed; each such text is kept
// once and shared. A thread's interrupts, when they are its values'
// `__interrupt__` (as a run leaves them), are kept as their task id only.
struct kept_record {
  // The record without its values or result, and without what the members
  // below or its key hold (its id, version, a run's thread and status).
  std::string json;
  std::shared_ptr<const std::string> values;  // a thread's values or a run's result (null: JSON null)
  std::int64_t version = 0;
  std::string thread_id;  // a run's thread, for the lookups by thread (a thread's: "", its key says it)
  bool unconfirmed = false;  // changed here and not read back from the journal yet
  std::string status;     // a run's, for the sweep of runs with work left (unparsed)
};

// Kept records by id (std::less<>: runs are looked up by the ids in
// catalog::runs_by_thread_'s entries, without a copy).
using kept_records = std::map<std::string, kept_record, std::less<>>;

class catalog {
 public:
  // `journaled` false (a store that keeps nothing past the process): the
  // records live in memory only, and nothing is written to `feed`.
  catalog(std::shared_ptr<orchestrator::event_feed> feed, bool journaled = true);

  // Reads the journal back (at start-up, before serving).
  boost::asio::awaitable<void> load();
  // Reads what was appended to the journal since the last read (by other
  // servers too) and applies it.
  boost::asio::awaitable<void> sync();
  // As sync(), but when nothing is new it waits up to `timeout` for an
  // append to the journal (from any server) and applies it.
  boost::asio::awaitable<void> follow(std::chrono::milliseconds timeout);
  // Called with every request to cancel a run read back from the journal
  // by load(), sync() or follow() (this catalog's own too): the run's id
  // and the action. Set before load().
  void on_cancel_read(std::function<void(const std::string&, const std::string&)> observer) {
    on_cancel_read_ = std::move(observer);
  }
  // Journals a request to cancel run `id` ("interrupt" or "rollback"), for
  // the server executing it (servers sharing a store): an entry of its own,
  // never a rewrite of the run's record, so it cannot be lost to a change
  // of the record made at the same time.
  boost::asio::awaitable<void> request_cancel(const std::string& id, const std::string& action);
  // The cancel requested for run `id` ("" none).
  std::string cancel_requested(const std::string& id) const;

  void add_system_assistant(assistant_record a);
  std::optional<assistant_record> assistant(const std::string& id) const;
  std::vector<assistant_record> assistants() const;
  boost::asio::awaitable<void> save(assistant_record a);

  std::optional<thread_record> thread(const std::string& id) const;
  std::vector<thread_record> threads() const;
  boost::asio::awaitable<void> save(thread_record t);
  boost::asio::awaitable<void> erase_thread(const std::string& id);

  std::optional<run_record> run(const std::string& id) const;
  // A run's status without reading its whole record (nullopt: no such run).
  std::optional<std::string> run_status(const std::string& id) const;
  std::vector<run_record> runs_of(const std::string& thread_id) const;  // oldest first
  std::vector<run_record> runs() const;
  // The threads with a run pending or left running (no run parsed).
  std::set<std::string> threads_with_work() const;
  boost::asio::awaitable<void> save(run_record r);
  boost::asio::awaitable<void> erase_run(const std::string& id);

  // Applies `change` to the record under the catalog's lock, so a check
  // and an update are one step; returns the changed record to write(), or
  // nullopt when there is no such record or `change` returned false.
  std::optional<thread_record> change_thread(const std::string& id, const std::function<bool(thread_record&)>& change);
  std::optional<run_record> change_run(const std::string& id, const std::function<bool(run_record&)>& change);
  // Journals a changed record.
  boost::asio::awaitable<void> write(const thread_record& t);
  boost::asio::awaitable<void> write(const run_record& r);
  // Journals a changed run and its changed thread (either may be absent)
  // in one write to the store.
  boost::asio::awaitable<void> write(const std::optional<run_record>& r, const std::optional<thread_record>& t);
  // Keeps `r` as the next version of its record, in memory only (write()
  // journals it); returns it with its version.
  run_record keep(run_record r);
  // A new run kept here whose write failed: taken out of memory again, and
  // its thread (`thread_written`, written with it) put back as it was
  // (`thread_before`) — each only while it is the version kept here and not
  // yet read back from the journal. Had the write landed after all, the next
  // sync reads them back; otherwise no server lists a run nobody will
  // execute. True when the run was taken out.
  bool forget_unwritten(const run_record& run, const std::optional<thread_record>& thread_written,
                        const std::optional<thread_record>& thread_before);

 private:
  boost::asio::awaitable<void> append(boost::json::object entry);
  boost::asio::awaitable<void> append_all(std::vector<boost::json::object> entries);
  // Applies journal entries after `read_up_to_`, in order; returns the
  // cancel requests read (run id, action), for on_cancel_read_.
  std::vector<std::pair<std::string, std::string>> apply(const std::vector<orchestrator::feed_event>& batch);
  void announce(const std::vector<std::pair<std::string, std::string>>& cancels) const;
  void drop_runs_of_deleted_threads();
  void keep_run(const std::string& id, kept_record run);  // under mutex_
  // Under mutex_: `k` (of the thread or run `id`) takes an equal values text
  // kept already, by its record's current version or its thread or run.
  void share_values(kept_record& k, const std::string& id, bool is_run) const;
  // Under mutex_: runs_by_thread_ follows runs_ (a run's thread never changes).
  void index_run(const std::string& thread_id, const std::string& run_id);
  void erase_runs_where(const std::function<bool(const kept_record&)>& doomed);
  void erase_run_now(const std::string& run_id);
  void restore_unwritten(const thread_record& written, const std::optional<thread_record>& before);
  boost::asio::awaitable<void> read_to_end();

  std::shared_ptr<orchestrator::event_feed> feed_;
  bool journaled_;
  mutable std::mutex mutex_;
  std::map<std::string, assistant_record> assistants_;
  kept_records threads_;
  kept_records runs_;
  // Every run under its thread, as thread id + '\0' + run id: runs_of()
  // reads a thread's runs without scanning every run (a scan per request
  // grew with the catalog: the ten-minute load). One string per run: a map
  // of threads to sets of run ids took two more blocks and a copy of each id.
  std::set<std::string, std::less<>> runs_by_thread_;
  // The entries of thread `id`'s runs in runs_by_thread_, in run id order.
  std::pair<std::set<std::string>::const_iterator, std::set<std::string>::const_iterator> runs_index_of(
      std::string_view thread_id) const;
  std::int64_t read_up_to_ = 0;  // the last journal position applied
  std::uint64_t syncs_asked_ = 0, syncs_done_ = 0;  // sync() calls; the newest one a read covered
  bool syncing_ = false;                            // a read of the journal is under way
  std::function<void(const std::string&, const std::string&)> on_cancel_read_;
  std::map<std::string, std::string> cancels_;  // run id -> action, until the run ends
};

}  // namespace switchboard::server
