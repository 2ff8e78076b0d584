#include "catalog.hpp"
#include "catalog_records.hpp"

#include "json_fields.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <tuple>
#include <type_traits>

namespace switchboard::server {

namespace json = boost::json;

namespace {

constexpr std::string_view journal_key = "switchboard.serve.catalog";
constexpr std::size_t read_batch = 1000;

// runs_by_thread_'s entry of a run, and the run id in a thread's entry.
std::string index_entry(std::string_view thread_id, std::string_view run_id) {
  std::string entry;
  entry.reserve(thread_id.size() + 1 + run_id.size());
  entry.append(thread_id).push_back('\0');
  entry.append(run_id);
  return entry;
}

std::string_view run_id_in(std::string_view entry, std::string_view thread_id) {
  return entry.substr(thread_id.size() + 1);
}

// Keeps `incoming` unless the map holds a newer version of it. Of two equal
// versions (two servers changed the record at once) the later in the
// journal wins, so every server reading the journal keeps the same one.
template <class Records, class Key, class Record>
void keep_newest(Records& records, const Key& id, Record incoming) {
  const auto it = records.find(id);
  if (it == records.end()) records.emplace(id, std::move(incoming));
  else if (it->second.version <= incoming.version) it->second = std::move(incoming);
}

}  // namespace

std::string iso8601(std::chrono::system_clock::time_point at) {
  const auto seconds = std::chrono::system_clock::to_time_t(at);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char out[40];
  const auto n = std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(out + n, sizeof out - n, ".%03dZ", static_cast<int>(ms));
  return out;
}

std::string now_iso8601() { return iso8601(std::chrono::system_clock::now()); }

catalog::catalog(std::shared_ptr<orchestrator::event_feed> feed, bool journaled)
    : feed_(std::move(feed)), journaled_(journaled) {}

static bool is_terminal_status(std::string_view status) {
  return status == "success" || status == "error" || status == "timeout" || status == "interrupted";
}

std::vector<std::pair<std::string, std::string>> catalog::apply(const std::vector<orchestrator::feed_event>& batch) {
  std::vector<std::pair<std::string, std::string>> cancels_read;
  std::scoped_lock lock(mutex_);
  for (const auto& e : batch) {
    if (e.position <= read_up_to_) continue;  // a concurrent read applied it
    read_up_to_ = e.position;
    boost::system::error_code ec;
    auto parsed = json::parse(e.event, ec);
    if (ec || !parsed.is_object()) {
      spdlog::warn("serve: journal entry {} is not JSON; skipped", e.position);
      continue;
    }
    auto& o = parsed.get_object();
    const auto kind = text_field(o, "kind");
    // Taken out of the entry: a thread's or run's kept form is built from it
    // without a copy (at start-up, for every record in the journal).
    json::object record;
    if (auto* in_entry = o.if_contains("record"); in_entry && in_entry->is_object())
      record = std::move(in_entry->get_object());
    if (kind == "assistant") {
      keep_newest(assistants_, text_field(record, "assistant_id"), assistant_from(record));
    } else if (kind == "thread") {
      const auto id = text_field(record, "thread_id");
      auto thread = kept_form(std::move(record), false);
      share_values(thread, id, false);
      keep_newest(threads_, id, std::move(thread));
    } else if (kind == "run") {
      const auto id = text_field(record, "run_id");
      auto run = kept_form(std::move(record), true);
      share_values(run, id, true);
      keep_run(id, std::move(run));
    } else if (kind == "run_cancel") {
      const auto id = text_field(o, "id");
      if (runs_.contains(id)) {
        cancels_[id] = text_field(o, "action");
        cancels_read.emplace_back(id, text_field(o, "action"));
      }
    } else if (kind == "thread_deleted") {
      const auto id = text_field(o, "id");
      threads_.erase(id);
      erase_runs_where([&](const kept_record& r) { return r.thread_id == id; });
    } else if (kind == "run_deleted") {
      erase_run_now(text_field(o, "id"));
      cancels_.erase(text_field(o, "id"));
    }
  }
  return cancels_read;
}

// A run read from the journal: the newer version is kept, except that an
// end is never undone (a change written from a stale copy on another
// server, at the same moment, must not make a finished run look running).
void catalog::keep_run(const std::string& id, kept_record run) {
  const auto it = runs_.find(id);
  if (it != runs_.end() && it->second.version <= run.version && !is_terminal_status(run.status) &&
      is_terminal_status(it->second.status))
    return;
  if (is_terminal_status(run.status)) cancels_.erase(id);
  index_run(run.thread_id, id);
  keep_newest(runs_, id, std::move(run));
}

void catalog::share_values(kept_record& k, const std::string& id, bool is_run) const {
  if (!k.values) return;
  const auto took = [&](const kept_records& records, std::string_view key) {
    const auto it = records.find(key);
    if (it == records.end() || !it->second.values || *it->second.values != *k.values) return false;
    k.values = it->second.values;
    return true;
  };
  if (took(is_run ? runs_ : threads_, id)) return;
  if (is_run) {
    took(threads_, k.thread_id);
    return;
  }
  // A thread's values are those of a run that just ended: among its newest
  // (run ids are time-ordered).
  const auto [first, last] = runs_index_of(id);
  int looked = 0;
  for (auto entry = last; entry != first && looked < 4; ++looked)
    if (took(runs_, run_id_in(*--entry, id))) return;
}

void catalog::index_run(const std::string& thread_id, const std::string& run_id) {
  runs_by_thread_.insert(index_entry(thread_id, run_id));
}

// The thread's entries are those starting with its id and '\0': from the
// first entry not less than its id (no entry is a bare id) to the first not
// less than its id followed by '\1'. Two lookups, however many runs it has.
std::pair<std::set<std::string>::const_iterator, std::set<std::string>::const_iterator> catalog::runs_index_of(
    std::string_view thread_id) const {
  std::string past(thread_id);
  past.push_back('\1');
  return {runs_by_thread_.lower_bound(thread_id), runs_by_thread_.lower_bound(past)};
}

void catalog::erase_run_now(const std::string& run_id) {
  const auto it = runs_.find(run_id);
  if (it == runs_.end()) return;
  if (const auto entry = runs_by_thread_.find(index_entry(it->second.thread_id, run_id)); entry != runs_by_thread_.end())
    runs_by_thread_.erase(entry);
  runs_.erase(it);
}

void catalog::erase_runs_where(const std::function<bool(const kept_record&)>& doomed) {
  std::vector<std::string> ids;
  for (const auto& [id, r] : runs_)
    if (doomed(r)) ids.push_back(id);
  for (const auto& id : ids) erase_run_now(id);
}

void catalog::announce(const std::vector<std::pair<std::string, std::string>>& cancels) const {
  if (!on_cancel_read_) return;
  for (const auto& [id, action] : cancels) on_cancel_read_(id, action);
}

boost::asio::awaitable<void> catalog::request_cancel(const std::string& id, const std::string& action) {
  {
    std::scoped_lock lock(mutex_);
    cancels_[id] = action;
  }
  json::object entry{{"kind", "run_cancel"}, {"id", id}, {"action", action}};
  co_await append(std::move(entry));
}

std::string catalog::cancel_requested(const std::string& id) const {
  std::scoped_lock lock(mutex_);
  const auto it = cancels_.find(id);
  return it == cancels_.end() ? std::string{} : it->second;
}

// Runs of deleted threads go with them.
void catalog::drop_runs_of_deleted_threads() {
  std::scoped_lock lock(mutex_);
  erase_runs_where([&](const kept_record& r) { return !threads_.contains(r.thread_id); });
}

// One read of the journal at a time: a sync that finds a read under way
// waits for it, and is done when a read that began after it was asked for
// has ended (it saw everything committed before). Under load every request
// would otherwise read the same new entries again.
boost::asio::awaitable<void> catalog::sync() {
  std::uint64_t mine = 0;
  {
    std::scoped_lock lock(mutex_);
    mine = ++syncs_asked_;
  }
  for (;;) {
    std::uint64_t covering = 0;
    {
      std::scoped_lock lock(mutex_);
      if (syncs_done_ >= mine) co_return;
      if (!syncing_) {
        syncing_ = true;
        covering = syncs_asked_;
      }
    }
    if (covering == 0) {  // another read is under way: look again shortly
      boost::asio::steady_timer pause(co_await boost::asio::this_coro::executor, std::chrono::microseconds(500));
      co_await pause.async_wait(boost::asio::use_awaitable);
      continue;
    }
    bool read = false;
    try {
      co_await read_to_end();
      read = true;
    } catch (...) {
      std::scoped_lock lock(mutex_);
      syncing_ = false;  // a waiter reads next
      throw;
    }
    std::scoped_lock lock(mutex_);
    syncing_ = false;
    if (read) syncs_done_ = std::max(syncs_done_, covering);
  }
}

boost::asio::awaitable<void> catalog::read_to_end() {
  for (;;) {
    std::int64_t after = 0;
    {
      std::scoped_lock lock(mutex_);
      after = read_up_to_;
    }
    const std::string key(journal_key);  // g++ 12: named before co_await
    auto batch = co_await feed_->read(key, after, read_batch);
    announce(apply(batch));
    if (batch.size() < read_batch) break;  // the end: no second read to learn it
  }
}

boost::asio::awaitable<void> catalog::follow(std::chrono::milliseconds timeout) {
  std::int64_t after = 0;
  {
    std::scoped_lock lock(mutex_);
    after = read_up_to_;
  }
  const std::string key(journal_key);  // g++ 12: named before co_await
  auto batch = co_await feed_->wait(key, after, 1000, timeout);
  announce(apply(batch));
}

boost::asio::awaitable<void> catalog::load() {
  co_await sync();
  drop_runs_of_deleted_threads();
  std::scoped_lock lock(mutex_);
  spdlog::info("serve: {} threads, {} runs, {} assistants from {} journal entries", threads_.size(), runs_.size(),
               assistants_.size(), read_up_to_);
}

boost::asio::awaitable<void> catalog::append(json::object entry) {
  if (!journaled_) co_return;
  std::string key(journal_key);  // g++ 12: named before co_await
  std::string text = json::serialize(entry);
  co_await feed_->append(std::move(key), std::move(text));
}

boost::asio::awaitable<void> catalog::append_all(std::vector<json::object> entries) {
  if (!journaled_ || entries.empty()) co_return;
  std::string key(journal_key);  // g++ 12: named before co_await
  std::vector<std::string> texts;
  texts.reserve(entries.size());
  for (const auto& e : entries) texts.push_back(json::serialize(e));
  co_await feed_->append_all(std::move(key), std::move(texts));
}

void catalog::add_system_assistant(assistant_record a) {
  std::scoped_lock lock(mutex_);
  a.system = true;
  assistants_[a.assistant_id] = std::move(a);
}

namespace {

// The maps of records, one per kind, read and changed the same way.
template <class Record>
std::optional<Record> find_record(const std::map<std::string, Record>& records, const std::string& id) {
  const auto it = records.find(id);
  if (it == records.end()) return std::nullopt;
  return it->second;
}

template <class Record>
Record unpack(const kept_record& k, const std::string& id) {
  if constexpr (std::is_same_v<Record, thread_record>) return unpack_thread(k, id);
  else return unpack_run(k, id);
}

template <class Record>
std::optional<Record> find_kept(const kept_records& records, const std::string& id) {
  const auto it = records.find(id);
  if (it == records.end()) return std::nullopt;
  return unpack<Record>(it->second, id);
}

template <class Record, class Keep>
std::vector<Record> records_where(const std::map<std::string, Record>& records, const Keep& keep) {
  std::vector<Record> out;
  for (const auto& [id, r] : records)
    if (keep(r)) out.push_back(r);
  return out;
}

template <class Record, class Keep>
std::vector<Record> unpacked_where(const kept_records& records, const Keep& keep) {
  std::vector<Record> out;
  for (const auto& [id, k] : records)
    if (keep(k)) out.push_back(unpack<Record>(k, id));
  return out;
}

// Stores `r` as the next version of the record `id`.
template <class Record>
void store_next_version(std::map<std::string, Record>& records, const std::string& id, Record& r) {
  auto& slot = records[id];
  r.version = slot.version + 1;
  slot = r;
}

// `share` gives the kept form its values text kept already (share_values),
// before the form replaces the record's current version.
template <class Record, class Share>
void keep_next_version(kept_records& records, const std::string& id, Record& r,
                       const Share& share) {
  auto& slot = records[id];
  r.version = slot.version + 1;
  auto next = kept(r);
  share(next);
  next.unconfirmed = true;
  slot = std::move(next);
}

template <class Record, class Change, class Share>
std::optional<Record> change_kept(kept_records& records, const std::string& id,
                                  const Change& change, const Share& share) {
  const auto it = records.find(id);
  if (it == records.end()) return std::nullopt;
  auto record = unpack<Record>(it->second, id);
  if (!change(record)) return std::nullopt;
  record.version = it->second.version + 1;
  record.updated_at = now_iso8601();
  auto next = kept(record);
  share(next);
  next.unconfirmed = true;
  it->second = std::move(next);
  return record;
}

constexpr auto any = [](const auto&) { return true; };

// Oldest first: by creation time, then by id (time-ordered within a millisecond).
std::vector<run_record> oldest_first(std::vector<run_record> runs) {
  std::ranges::sort(runs, [](const run_record& a, const run_record& b) {
    return std::tie(a.created_at, a.run_id) < std::tie(b.created_at, b.run_id);
  });
  return runs;
}

}  // namespace

std::optional<assistant_record> catalog::assistant(const std::string& id) const {
  std::scoped_lock lock(mutex_);
  return find_record(assistants_, id);
}

std::vector<assistant_record> catalog::assistants() const {
  std::scoped_lock lock(mutex_);
  return records_where(assistants_, any);
}

boost::asio::awaitable<void> catalog::save(assistant_record a) {
  {
    std::scoped_lock lock(mutex_);
    store_next_version(assistants_, a.assistant_id, a);
  }
  json::object entry{{"kind", "assistant"}, {"record", to_json(a)}};
  co_await append(std::move(entry));
}

std::optional<thread_record> catalog::thread(const std::string& id) const {
  std::scoped_lock lock(mutex_);
  return find_kept<thread_record>(threads_, id);
}

std::vector<thread_record> catalog::threads() const {
  std::scoped_lock lock(mutex_);
  return unpacked_where<thread_record>(threads_, any);
}

boost::asio::awaitable<void> catalog::save(thread_record t) {
  std::optional<thread_record> before;
  {
    std::scoped_lock lock(mutex_);
    before = find_kept<thread_record>(threads_, t.thread_id);
    keep_next_version(threads_, t.thread_id, t, [&](kept_record& k) { share_values(k, t.thread_id, false); });
  }
  try {
    co_await write(t);
  } catch (...) {
    restore_unwritten(t, before);
    throw;
  }
}

// The thread as it was before `written`, whose write failed (see
// forget_unwritten); a version kept since stays.
void catalog::restore_unwritten(const thread_record& written, const std::optional<thread_record>& before) {
  std::scoped_lock lock(mutex_);
  const auto it = threads_.find(written.thread_id);
  if (it == threads_.end() || it->second.version != written.version || !it->second.unconfirmed) return;
  if (before) {
    auto restored = kept(*before);
    share_values(restored, written.thread_id, false);
    it->second = std::move(restored);
  }
  else threads_.erase(it);
}

bool catalog::forget_unwritten(const run_record& run, const std::optional<thread_record>& thread_written,
                               const std::optional<thread_record>& thread_before) {
  bool forgotten = false;
  {
    std::scoped_lock lock(mutex_);
    const auto it = runs_.find(run.run_id);
    if (it != runs_.end() && it->second.version == run.version && it->second.unconfirmed) {
      erase_run_now(run.run_id);
      cancels_.erase(run.run_id);
      forgotten = true;
    }
  }
  if (thread_written) restore_unwritten(*thread_written, thread_before);
  return forgotten;
}

boost::asio::awaitable<void> catalog::erase_thread(const std::string& id) {
  {
    std::scoped_lock lock(mutex_);
    threads_.erase(id);
    erase_runs_where([&](const kept_record& r) { return r.thread_id == id; });
  }
  json::object entry{{"kind", "thread_deleted"}, {"id", id}};
  co_await append(std::move(entry));
}

std::optional<run_record> catalog::run(const std::string& id) const {
  std::scoped_lock lock(mutex_);
  return find_kept<run_record>(runs_, id);
}

std::optional<std::string> catalog::run_status(const std::string& id) const {
  std::scoped_lock lock(mutex_);
  const auto it = runs_.find(id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.status;
}

std::vector<run_record> catalog::runs_of(const std::string& thread_id) const {
  std::scoped_lock lock(mutex_);
  std::vector<run_record> out;
  const auto [first, last] = runs_index_of(thread_id);
  for (auto entry = first; entry != last; ++entry) {
    if (const auto it = runs_.find(run_id_in(*entry, thread_id)); it != runs_.end())
      out.push_back(unpack<run_record>(it->second, it->first));
  }
  return oldest_first(std::move(out));
}

std::set<std::string> catalog::threads_with_work() const {
  std::scoped_lock lock(mutex_);
  std::set<std::string> threads;
  for (const auto& [id, r] : runs_)
    if (r.status == "pending" || r.status == "running") threads.insert(r.thread_id);
  return threads;
}

std::vector<run_record> catalog::runs() const {
  std::scoped_lock lock(mutex_);
  return oldest_first(unpacked_where<run_record>(runs_, any));
}

boost::asio::awaitable<void> catalog::save(run_record r) {
  {
    std::scoped_lock lock(mutex_);
    index_run(r.thread_id, r.run_id);
    keep_next_version(runs_, r.run_id, r, [&](kept_record& k) { share_values(k, r.run_id, true); });
  }
  co_await write(r);
}

boost::asio::awaitable<void> catalog::erase_run(const std::string& id) {
  {
    std::scoped_lock lock(mutex_);
    erase_run_now(id);
    cancels_.erase(id);
  }
  json::object entry{{"kind", "run_deleted"}, {"id", id}};
  co_await append(std::move(entry));
}

std::optional<thread_record> catalog::change_thread(const std::string& id,
                                                   const std::function<bool(thread_record&)>& change) {
  std::scoped_lock lock(mutex_);
  return change_kept<thread_record>(threads_, id, change,
                                    [&](kept_record& k) { share_values(k, id, false); });
}

std::optional<run_record> catalog::change_run(const std::string& id, const std::function<bool(run_record&)>& change) {
  std::scoped_lock lock(mutex_);
  return change_kept<run_record>(runs_, id, change, [&](kept_record& k) { share_values(k, id, true); });
}

boost::asio::awaitable<void> catalog::write(const thread_record& t) {
  json::object entry{{"kind", "thread"}, {"record", to_json(t)}};
  co_await append(std::move(entry));
}

boost::asio::awaitable<void> catalog::write(const std::optional<run_record>& r, const std::optional<thread_record>& t) {
  std::vector<json::object> entries;
  if (r) entries.push_back(json::object{{"kind", "run"}, {"record", to_json(*r)}});
  if (t) entries.push_back(json::object{{"kind", "thread"}, {"record", to_json(*t)}});
  co_await append_all(std::move(entries));
}

run_record catalog::keep(run_record r) {
  std::scoped_lock lock(mutex_);
  index_run(r.thread_id, r.run_id);
  keep_next_version(runs_, r.run_id, r, [&](kept_record& k) { share_values(k, r.run_id, true); });
  return r;
}

boost::asio::awaitable<void> catalog::write(const run_record& r) {
  json::object entry{{"kind", "run"}, {"record", to_json(r)}};
  co_await append(std::move(entry));
}

}  // namespace switchboard::server
