// The household's calendar in SQLite: schema, seeding, snapshots and keyed
// changes in BEGIN IMMEDIATE transactions.
#include <switchboard/scheduling/calendar.hpp>

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace switchboard::scheduling {
namespace {

constexpr const char* format_name = "switchboard-scheduling-calendar";
constexpr const char* format_version = "1";
constexpr int busy_timeout_ms = 10'000;

constexpr const char* schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS calendar_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
  id INTEGER PRIMARY KEY,
  owner TEXT NOT NULL,
  owner_kind TEXT NOT NULL,
  title TEXT NOT NULL,
  booked_by TEXT NOT NULL DEFAULT '',
  start TEXT, "end" TEXT,
  weekdays INTEGER NOT NULL DEFAULT 0, from_minute INTEGER, to_minute INTEGER,
  origin TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS operations(
  run_id TEXT NOT NULL, item INTEGER NOT NULL, result TEXT NOT NULL, PRIMARY KEY(run_id, item));
)sql";

class statement {
 public:
  statement(sqlite3* db, const char* sql, const std::string& where) : db_(db), where_(where) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~statement() { sqlite3_finalize(stmt_); }
  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  statement& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // True while a row is available.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail("step");
  }
  void run() {
    while (step()) {
    }
    sqlite3_reset(stmt_);
  }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string{};
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw data_error(where_ + ": " + what + " failed: " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string where_;
};

void exec(sqlite3* db, const char* sql, const std::string& where) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw data_error(where + ": " + text);
  }
}

// Rolls back unless committed.
class transaction {
 public:
  transaction(sqlite3* db, const std::string& where) : db_(db), where_(where) {
    exec(db, "BEGIN IMMEDIATE", where);
  }
  ~transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, "COMMIT", where_);
    done_ = true;
  }

 private:
  sqlite3* db_;
  std::string where_;
  bool done_ = false;
};

std::string weekday_mask_text(unsigned mask) { return std::to_string(mask); }

void insert_entry(sqlite3* db, const owned_entry& e, const std::string& origin, const std::string& where) {
  statement s(db,
              "INSERT INTO entries(owner, owner_kind, title, booked_by, start, \"end\", weekdays, from_minute, "
              "to_minute, origin) VALUES(?,?,?,?,?,?,?,?,?,?)",
              where);
  s.bind(1, e.owner).bind(2, std::string(e.resource ? "resource" : "member")).bind(3, e.entry.title);
  s.bind(4, e.entry.by);
  if (e.entry.once) {
    s.bind(5, format_datetime(e.entry.once->start)).bind(6, format_datetime(e.entry.once->end));
    s.bind(7, std::int64_t{0}).bind_null(8).bind_null(9);
  } else {
    s.bind_null(5).bind_null(6).bind(7, static_cast<std::int64_t>(e.entry.weekdays));
    s.bind(8, std::int64_t{e.entry.from}).bind(9, std::int64_t{e.entry.to});
  }
  s.bind(10, origin);
  s.run();
}

void seed_entries(sqlite3* db, const household& seed, const std::string& where) {
  exec(db, "DELETE FROM entries; DELETE FROM operations;", where);
  for (const auto& m : seed.members)
    for (const auto& e : m.calendar) insert_entry(db, {m.name, false, e}, "seed", where);
  for (const auto& r : seed.resources)
    for (const auto& e : r.bookings) insert_entry(db, {r.name, true, e}, "seed", where);
}

// Creates the tables and seeds a new calendar; refuses a database that is
// some other application's.
void prepare(sqlite3* db, const household& seed, bool reset, const std::string& where) {
  transaction t(db, where);
  int tables = 0;
  bool has_meta = false;
  {
    statement s(db, "SELECT name FROM sqlite_master WHERE type = 'table'", where);
    while (s.step()) {
      ++tables;
      has_meta = has_meta || s.text(0) == "calendar_meta";
    }
  }
  if (tables > 0 && !has_meta)
    throw data_error(where + ": not a household calendar (a SQLite database of another application: no "
                             "calendar_meta table); name another file or remove this one");
  bool fresh = !has_meta;
  if (has_meta) {
    statement s(db, "SELECT key, value FROM calendar_meta", where);
    std::string format;
    std::string version;
    while (s.step()) {
      if (s.text(0) == "format") format = s.text(1);
      if (s.text(0) == "version") version = s.text(1);
    }
    if (format != format_name)
      throw data_error(where + ": not a household calendar (format \"" + format + "\", expected \"" +
                       format_name + "\")");
    if (version != format_version)
      throw data_error(where + ": calendar format version " + version + " is not supported (expected " +
                       format_version + ")");
  }
  exec(db, schema_sql, where);
  if (fresh) {
    statement s(db, "INSERT INTO calendar_meta(key, value) VALUES('format', ?), ('version', ?)", where);
    s.bind(1, std::string(format_name)).bind(2, std::string(format_version));
    s.run();
  }
  if (fresh || reset) seed_entries(db, seed, where);
  t.commit();
}

sqlite3* open_connection(const std::string& name, int flags, const std::string& where) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(name.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    const std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw data_error(where + ": cannot open the calendar: " + message);
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  sqlite3_extended_result_codes(db, 1);
  return db;
}

// A new file is created private before SQLite opens it (SQLite would use
// the umask); its directory is created 0700.
void create_private(const std::filesystem::path& file) {
  const auto dir = file.parent_path();
  if (!dir.empty() && !std::filesystem::exists(dir)) {
    std::filesystem::create_directories(dir);
    ::chmod(dir.c_str(), 0700);
  }
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
}

calendar_entry read_entry(const statement& s, const std::string& where, std::int64_t id) {
  auto bad = [&](const std::string& what) -> data_error {
    return data_error(where + ": entry " + std::to_string(id) + ": " + what);
  };
  calendar_entry e;
  e.title = s.text(2);
  e.by = s.text(3);
  if (e.title.empty()) throw bad("empty title");
  if (!s.is_null(4)) {
    const auto start = parse_datetime(s.text(4));
    const auto end = parse_datetime(s.text(5));
    if (!start || !end || *end <= *start) throw bad("malformed start/end \"" + s.text(4) + "\"/\"" + s.text(5) + "\"");
    e.once = interval{*start, *end};
    return e;
  }
  const auto mask = s.integer(6);
  const auto from = s.integer(7);
  const auto to = s.integer(8);
  if (mask <= 0 || mask > 127 || from < 0 || to > minutes_per_day || to <= from)
    throw bad("malformed weekly entry (weekdays " + weekday_mask_text(static_cast<unsigned>(mask)) + ")");
  e.weekdays = static_cast<unsigned>(mask);
  e.from = static_cast<int>(from);
  e.to = static_cast<int>(to);
  return e;
}

household read_household(sqlite3* db, const household& seed, const std::string& where) {
  household h = seed;
  for (auto& m : h.members) m.calendar.clear();
  for (auto& r : h.resources) r.bookings.clear();
  statement s(db,
              "SELECT owner, owner_kind, title, booked_by, start, \"end\", weekdays, from_minute, to_minute, id "
              "FROM entries ORDER BY id",
              where);
  while (s.step()) {
    const std::int64_t id = s.integer(9);
    const std::string owner = s.text(0);
    const std::string kind = s.text(1);
    calendar_entry e = read_entry(s, where, id);
    if (kind == "member") {
      auto it = std::ranges::find_if(h.members, [&](const member& m) { return m.name == owner; });
      if (it == h.members.end())
        throw data_error(where + ": entry " + std::to_string(id) + ": unknown member \"" + owner +
                         "\" (the household knows " + seed.member_names() + "; --reset restores the seed)");
      it->calendar.push_back(std::move(e));
    } else if (kind == "resource") {
      auto it = std::ranges::find_if(h.resources, [&](const resource& r) { return r.name == owner; });
      if (it == h.resources.end())
        throw data_error(where + ": entry " + std::to_string(id) + ": unknown resource \"" + owner + "\"");
      it->bookings.push_back(std::move(e));
    } else {
      throw data_error(where + ": entry " + std::to_string(id) + ": unknown owner kind \"" + kind + "\"");
    }
  }
  return h;
}

// How many entries it removed.
int remove_entry(sqlite3* db, const owned_entry& e, const std::string& where) {
  if (!e.entry.once) return 0;
  statement s(db,
              "DELETE FROM entries WHERE (? = '' OR owner = ?) AND lower(title) = lower(?) AND start = ? "
              "AND \"end\" = ?",
              where);
  s.bind(1, e.owner).bind(2, e.owner).bind(3, e.entry.title);
  s.bind(4, format_datetime(e.entry.once->start)).bind(5, format_datetime(e.entry.once->end));
  s.run();
  return sqlite3_changes(db);
}

}  // namespace

calendar::calendar(std::filesystem::path file, household seed) : file_(std::move(file)), seed_(std::move(seed)) {}

calendar::~calendar() {
  if (memory_) sqlite3_close(memory_);
}

std::shared_ptr<calendar> calendar::open_file(const std::filesystem::path& file, household seed, bool reset) {
  std::shared_ptr<calendar> out(new calendar(file, std::move(seed)));
  const std::string where = file.string();
  try {
    create_private(file);
  } catch (const std::filesystem::filesystem_error& e) {
    throw data_error(where + ": cannot create the calendar: " + e.code().message());
  }
  sqlite3* db = open_connection(where, SQLITE_OPEN_READWRITE, where);
  try {
    prepare(db, out->seed_, reset, where);
  } catch (const data_error& e) {
    sqlite3_close(db);
    // SQLite's own words for a foreign file ("file is not a database") are
    // kept, with what was expected.
    const std::string text = e.what();
    if (text.find("not a database") != std::string::npos)
      throw data_error(where + ": not a household calendar (not an SQLite database); name another file or "
                               "remove this one");
    throw;
  }
  sqlite3_close(db);
  return out;
}

std::shared_ptr<calendar> calendar::in_memory(household seed) {
  std::shared_ptr<calendar> out(new calendar({}, std::move(seed)));
  out->memory_ = open_connection(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "calendar (in memory)");
  prepare(out->memory_, out->seed_, false, "calendar (in memory)");
  return out;
}

template <class F>
auto calendar::with_connection(F&& f) const {
  if (memory_) {
    std::lock_guard lock(memory_mutex_);
    return f(memory_, std::string("calendar (in memory)"));
  }
  const std::string where = file_.string();
  sqlite3* db = open_connection(where, SQLITE_OPEN_READWRITE, where);
  struct closer {
    sqlite3* db;
    ~closer() { sqlite3_close(db); }
  } close{db};
  return f(db, where);
}

household calendar::snapshot() const {
  return with_connection([&](sqlite3* db, const std::string& where) {
    // One read transaction: a snapshot never mixes two writers' states.
    exec(db, "BEGIN", where);
    try {
      household h = read_household(db, seed_, where);
      exec(db, "COMMIT", where);
      return h;
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  });
}

apply_result calendar::apply(const calendar_change& change) {
  return with_connection([&](sqlite3* db, const std::string& where) {
    transaction t(db, where);
    apply_result out;
    if (!change.run_id.empty()) {
      statement s(db, "SELECT result FROM operations WHERE run_id = ? AND item = ?", where);
      s.bind(1, change.run_id).bind(2, std::int64_t{change.item});
      if (s.step()) {
        out.outcome = apply_result::status::replayed;
        out.result = s.text(0);
        return out;
      }
    }
    // The event found before the transaction must still be there: a run that
    // moved or cancelled it meanwhile leaves nothing to remove, and this
    // change would otherwise put a second copy somewhere else.
    for (const auto& e : change.remove) {
      if (remove_entry(db, e, where) == 0 && e.entry.once) {
        out.outcome = apply_result::status::refused;
        out.problems.push_back("\"" + e.entry.title + "\" " + describe(*e.entry.once) +
                               " is no longer in the calendar: another run changed it since it was found");
        return out;  // rolled back
      }
    }
    calendar_decision decision = change.decide(read_household(db, seed_, where));
    if (!decision.problems.empty()) {
      out.outcome = apply_result::status::refused;
      out.problems = std::move(decision.problems);
      return out;  // rolled back
    }
    const std::string origin = change.run_id.empty() ? std::string("unkeyed") : change.run_id;
    for (const auto& e : decision.add) insert_entry(db, e, origin, where);
    if (!change.run_id.empty()) {
      statement s(db, "INSERT INTO operations(run_id, item, result) VALUES(?, ?, ?)", where);
      s.bind(1, change.run_id).bind(2, std::int64_t{change.item}).bind(3, decision.result);
      s.run();
    }
    t.commit();
    out.result = std::move(decision.result);
    return out;
  });
}

void calendar::reset() {
  with_connection([&](sqlite3* db, const std::string& where) {
    transaction t(db, where);
    seed_entries(db, seed_, where);
    t.commit();
    return 0;
  });
}

}  // namespace switchboard::scheduling
