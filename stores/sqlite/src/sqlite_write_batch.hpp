// Group commit for the SQLite store: the writes callers start while the
// store's thread is busy wait in a queue, and the thread then applies all of
// them in one transaction (one commit, one append to the write-ahead log)
// instead of one transaction each. There is no batching window: a write
// that finds the thread idle starts at once, alone; under load the queue
// fills while the previous transaction commits, and the batch grows with
// the load.
//
// Each caller is told its own outcome once the transaction holding its
// write has committed (never before: what a caller is told was written is
// on disk as far as SQLite's synchronous mode promises). A write refused by
// its own checks (a stale fence, a step gone back, a run that exists)
// throws before changing any row: it is refused alone and the others in the
// batch still land. A write that fails after changing rows (an SQL error)
// rolls the whole transaction back and every write of the batch is then
// retried alone, in a transaction of its own, so one failure never costs
// another caller its write.
//
// Thread-safety: submit() from any thread; the writes run on the
// connection's thread.
#pragma once

#include "sqlite_connection.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace switchboard::stores::sqlite {

class write_batch {
 public:
  // How many writes, and how many transactions they took (tests and
  // benchmarks: fewer transactions than writes is the batching at work).
  struct counts {
    std::uint64_t writes = 0;
    std::uint64_t transactions = 0;
  };

  explicit write_batch(connection& db) : db_(db) {}
  write_batch(const write_batch&) = delete;
  write_batch& operator=(const write_batch&) = delete;

  // Runs `write` on the connection's thread inside a transaction it may
  // share with other writes, and completes once that transaction has
  // committed; rethrows what `write` threw. `write` must throw before its
  // first change to refuse its request (its checks first, then its writes)
  // and must not begin or end transactions. It refers to the caller's
  // frame, which stays alive while the caller waits here.
  boost::asio::awaitable<void> submit(std::function<void()> write) {
    // An exception_ptr completion: co_await rethrows a non-null one. The
    // operation is named first (no temporaries inside co_await: g++ 12).
    auto initiate = [this, &write](auto handler) {
      // Tracked: the caller's io_context keeps running (and its strands
      // alive) until the caller has been told, even when the last thing it
      // waits for is this write; the store's thread drops its copy last.
      boost::asio::any_io_executor resume_on = boost::asio::prefer(
          boost::asio::get_associated_executor(handler), boost::asio::execution::outstanding_work.tracked);
      enqueue(std::move(write), std::move(handler), std::move(resume_on));
    };
    auto committed = boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(std::exception_ptr)>(
        std::move(initiate), boost::asio::use_awaitable);
    co_await std::move(committed);
  }

  counts totals() const noexcept {
    return {writes_.load(std::memory_order_relaxed), transactions_.load(std::memory_order_relaxed)};
  }

 private:
  using handler_type = boost::asio::any_completion_handler<void(std::exception_ptr)>;
  struct pending {
    std::function<void()> write;
    handler_type done;
    boost::asio::any_io_executor resume_on;
    std::exception_ptr error;
  };

  void enqueue(std::function<void()> write, handler_type done, boost::asio::any_io_executor resume_on) {
    bool start = false;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(write), std::move(done), std::move(resume_on), nullptr});
      start = !scheduled_;
      scheduled_ = true;
    }
    // One flush at a time is scheduled; writes queued while it waits or
    // runs join it or the next one.
    if (start) boost::asio::post(db_.executor(), [this] { flush(); });
  }

  // On the connection's thread: takes every write queued so far.
  void flush() {
    std::vector<pending> batch;
    {
      std::lock_guard lock(mutex_);
      batch.swap(queue_);
      scheduled_ = false;
    }
    if (batch.size() == 1 || !apply_together(batch)) {
      for (auto& item : batch) apply_alone(item);
    }
    writes_.fetch_add(batch.size(), std::memory_order_relaxed);
    for (auto& item : batch) complete(item);
  }

  // One transaction for the whole batch. False when it could not be
  // committed as a whole (an error after a write changed rows, or the
  // commit itself failed): nothing of it stays, each write is retried
  // alone. A failure to begin fails every write with that error.
  bool apply_together(std::vector<pending>& batch) {
    std::optional<connection::transaction> tx;
    try {
      tx.emplace(db_);
    } catch (...) {
      for (auto& item : batch) item.error = std::current_exception();
      return true;
    }
    for (auto& item : batch) {
      const auto changes_before = db_.total_changes();
      try {
        item.write();
      } catch (...) {
        // Refused by its checks, nothing written: it fails alone.
        if (db_.total_changes() == changes_before && db_.in_transaction()) {
          item.error = std::current_exception();
          continue;
        }
        for (auto& reset : batch) reset.error = nullptr;
        return false;  // the transaction's destructor rolls it back
      }
    }
    try {
      tx->commit();
    } catch (...) {
      for (auto& reset : batch) reset.error = nullptr;
      return false;
    }
    transactions_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void apply_alone(pending& item) {
    try {
      connection::transaction tx(db_);
      item.write();
      tx.commit();
      transactions_.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      item.error = std::current_exception();
    }
  }

  // Resumes the caller on its own executor.
  static void complete(pending& item) {
    boost::asio::post(item.resume_on, [done = std::move(item.done), error = item.error]() mutable {
      std::move(done)(error);
    });
  }

  connection& db_;
  std::mutex mutex_;
  std::vector<pending> queue_;
  bool scheduled_ = false;
  std::atomic<std::uint64_t> writes_{0}, transactions_{0};
};

}  // namespace switchboard::stores::sqlite
