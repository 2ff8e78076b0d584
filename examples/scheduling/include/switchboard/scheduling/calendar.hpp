// The household's calendar: the members' calendar entries and the
// resources' bookings, kept in an embedded SQLite file so that what one run
// books, a later run (another process) sees as a conflict. The shipped
// data/*.json files are the seed: a new file is filled from them, and
// reset() restores them.
//
//   auto cal = calendar::open_file(state_dir / "scheduling" / "calendar.db", seed, false);
//   household now = cal->snapshot();          // seed data + the calendar's entries
//   auto r = cal->apply(change);              // one BEGIN IMMEDIATE transaction
//
// A change may be keyed (run_id + item; the calendar tools use the run's id
// and the tool call's id as run_id, item 0): applying a key a second time
// (a step run again after a crash) changes nothing and returns the result
// stored the first time. The change's decision is made inside the
// transaction, on the state as it is then, so two processes racing for one
// slot cannot both book it.
//
// The file is untrusted: a file that is not SQLite, not a calendar, or holds
// malformed rows is a data_error naming the file (and the row), never a
// crash. A new file is created 0600 in a directory created 0700.
//
// Thread-safety: a calendar may be used from several threads at once; a
// file-backed one opens a connection per call (SQLite serialises writers,
// waiting up to 10 s for a lock), an in-memory one serialises calls.
#pragma once

#include <switchboard/scheduling/household.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace switchboard::scheduling {

// An entry of a member's calendar (resource = false) or a resource's
// bookings (resource = true), by the owner's canonical name.
struct owned_entry {
  std::string owner;
  bool resource = false;
  calendar_entry entry;
};

// What a booking step decides, inside the transaction, from the household
// as it is then.
struct calendar_decision {
  std::vector<std::string> problems;  // non-empty: change nothing (refused)
  std::vector<owned_entry> add;       // entries to write
  std::string result;                 // stored under the key, returned on a replay
};

// What a booking step asks for.
struct calendar_change {
  std::string run_id;  // the key; "" = no key: applied every time
  int item = 0;        // with run_id, the key (which change of the run)
  // Dated entries to remove first: every entry whose title (ignoring case)
  // and interval match one of these, of that owner ("" = any owner).
  std::vector<owned_entry> remove;
  // Called inside the transaction with the household after `remove`.
  std::function<calendar_decision(const household&)> decide;
};

struct apply_result {
  enum class status { applied, replayed, refused };
  status outcome = status::applied;
  std::string result;                 // the stored result (replayed) or the decision's
  std::vector<std::string> problems;  // refused: the decision's problems
};

class calendar {
 public:
  // Opens `file`, creating it (and its directory) and seeding it from
  // `seed` when it does not exist or holds no calendar yet; with `reset`,
  // restores the seed. Throws data_error naming the file.
  static std::shared_ptr<calendar> open_file(const std::filesystem::path& file, household seed,
                                             bool reset = false);
  // A calendar that lives as long as this object (no file).
  static std::shared_ptr<calendar> in_memory(household seed);

  ~calendar();
  calendar(const calendar&) = delete;
  calendar& operator=(const calendar&) = delete;

  // The seed's members, resources and rules with the calendar's entries as
  // their calendars and bookings. Throws data_error (file unreadable or
  // corrupt).
  household snapshot() const;
  // Applies `change` atomically (see above). Throws data_error.
  apply_result apply(const calendar_change& change);
  // Restores the seed entries and forgets every applied key.
  void reset();

  // The file; empty for an in-memory calendar.
  const std::filesystem::path& file() const noexcept { return file_; }
  const household& seed() const noexcept { return seed_; }

 private:
  calendar(std::filesystem::path file, household seed);
  template <class F>
  auto with_connection(F&& f) const;

  std::filesystem::path file_;
  household seed_;
  mutable std::mutex memory_mutex_;  // in-memory: one connection, one caller at a time
  sqlite3* memory_ = nullptr;
};

}  // namespace switchboard::scheduling
