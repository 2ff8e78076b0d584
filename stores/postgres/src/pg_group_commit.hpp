// Group commit for the PostgreSQL store's writes: a write that arrives
// while every writer is busy waits, and every write that waited goes in the
// next statement together, whatever their runs. A writer is a coroutine of
// its own on the pool's thread, not one of the callers. No batching window:
// a write that finds nothing under way goes at once, alone; under load the
// groups grow with the load. Each caller is told of its own write only
// (done, or its own error).
//
// Thread-safety: none; used on the pool's thread only (database::io()).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

namespace switchboard::stores::postgres {

template <class Write>
class group_commit {
 public:
  // `writers`: groups that may be written at once (each on a connection of
  // its own); a write arriving while all are busy waits for the next group.
  explicit group_commit(std::size_t writers = 1) : writers_(writers) {}

  // A write, what its caller learns, and how it waits.
  struct entry {
    Write write;
    std::exception_ptr error;  // its own failure, thrown to its caller
    bool written = false;
    std::unique_ptr<boost::asio::steady_timer> done;  // cancelled once written
  };
  using group = std::vector<std::shared_ptr<entry>>;

  // Writes `mine`, alone or with the writes waiting with it, through
  // `write_group(const group&)` (an awaitable that sets each entry's error
  // or throws for all of them). Returns once `mine` is written: a caller
  // never waits for groups that came after its own.
  template <class WriteGroup>
  boost::asio::awaitable<void> take_turn(boost::asio::io_context& io, std::shared_ptr<entry> mine,
                                         WriteGroup write_group) {
    mine->done = std::make_unique<boost::asio::steady_timer>(io, boost::asio::steady_timer::time_point::max());
    waiting_.push_back(mine);
    if (busy_ < writers_) {
      ++busy_;
      boost::asio::co_spawn(io, write_while_waiting(std::move(write_group)), boost::asio::detached);
    }
    boost::system::error_code ignored;
    while (!mine->written) {
      co_await mine->done->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
    }
  }

 private:
  // One writer: writes what waits, group after group, until nothing does.
  template <class WriteGroup>
  boost::asio::awaitable<void> write_while_waiting(WriteGroup write_group) {
    while (!waiting_.empty()) {
      auto next = std::move(waiting_);
      waiting_.clear();
      try {
        co_await write_group(std::as_const(next));
      } catch (...) {
        for (auto& e : next) e->error = std::current_exception();
      }
      for (auto& e : next) {
        e->written = true;
        e->done->cancel();
      }
    }
    --busy_;
  }

  group waiting_;          // to be written next
  std::size_t writers_;    // groups written at once, at most
  std::size_t busy_ = 0;   // groups being written
};

}  // namespace switchboard::stores::postgres
