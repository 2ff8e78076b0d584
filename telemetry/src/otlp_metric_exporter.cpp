#include <switchboard/telemetry/otlp_metric_exporter.hpp>

#include "otlp_transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace switchboard::telemetry {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

const otlp_metric_exporter_options& checked(const otlp_metric_exporter_options& options) {
  if (options.interval <= milliseconds::zero())
    throw std::invalid_argument("otlp metric exporter: the export interval must be positive");
  return options;
}

}  // namespace

class otlp_metric_exporter::impl {
 public:
  impl(std::shared_ptr<const meter> source, otlp_metric_exporter_options options)
      : options_(checked(options)), source_(std::move(source)), transport_(options_.otlp, "rejectedDataPoints") {
    if (!source_) throw std::invalid_argument("otlp metric exporter: no meter");
    asio::co_spawn(io_, run(), asio::bind_cancellation_slot(cancel_.slot(), [this](std::exception_ptr error) {
                     if (error) spdlog::error("otlp metric exporter: the export loop stopped");
                     finish();
                   }));
    worker_ = std::thread([this] { io_.run(); });
  }

  ~impl() { shutdown(options_.otlp.shutdown_timeout); }

  bool force_flush(milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (finished_) return true;
    const std::uint64_t wanted = ++requested_;
    lock.unlock();
    wake_worker();
    lock.lock();
    return done_.wait_for(lock, timeout, [&] { return completed_ >= wanted || finished_; });
  }

  void shutdown(milliseconds timeout) {
    {
      std::scoped_lock lock(mutex_);
      if (!stopping_) {
        stopping_ = true;
        deadline_ = clock::now() + timeout;
      }
    }
    wake_worker();
    if (!wait_finished(timeout)) {
      // The collector holds the last request (or a back-off runs): cancel it.
      asio::post(io_, [this] { cancel_.emit(asio::cancellation_type::terminal); });
      if (!wait_finished(milliseconds(500))) io_.stop();
    }
    std::scoped_lock lock(join_mutex_);
    if (worker_.joinable()) worker_.join();
  }

  metric_exporter_counters counters() const {
    std::scoped_lock lock(mutex_);
    return counters_;
  }

 private:
  asio::awaitable<void> run() {
    while (true) {
      if (!urgent()) {
        wake_.expires_after(options_.interval);
        co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
      }
      const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none) co_return;
      // Read before the export: a shutdown that begins during it still gets
      // an export of its own, with what was recorded meanwhile.
      const bool last = stopping();
      const std::uint64_t serving = requests_now();
      co_await export_once();
      complete(serving);
      if (last) co_return;
    }
  }

  asio::awaitable<void> export_once() {
    const std::vector<metric_data> collected = source_->collect();
    if (collected.empty()) co_return;
    const std::string body = encode_otlp_metrics(options_.otlp.resource, options_.otlp.scope, collected);
    const detail::delivery_hooks hooks{[this] { return attempt_timeout(); },
                                       [this](milliseconds pause) { return may_wait(pause); },
                                       [this] { count([](metric_exporter_counters& c) { ++c.requests; }); },
                                       [this] { count([](metric_exporter_counters& c) { ++c.retries; }); }};
    const detail::delivery outcome = co_await transport_.deliver(io_, body, hooks);
    if (!outcome.delivered) {
      spdlog::warn("otlp metric exporter: metrics not exported after {} attempt(s): {}", outcome.attempts,
                   outcome.what);
      count([](metric_exporter_counters& c) { ++c.failed; });
      co_return;
    }
    if (outcome.rejected != 0) spdlog::warn("otlp metric exporter: the collector rejected {} data points", outcome.rejected);
    count([&](metric_exporter_counters& c) {
      ++c.exports;
      c.rejected_points += outcome.rejected;
    });
  }

  template <typename Change>
  void count(Change change) {
    std::scoped_lock lock(mutex_);
    change(counters_);
  }

  milliseconds attempt_timeout() {
    std::scoped_lock lock(mutex_);
    if (!stopping_) return options_.otlp.timeout;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - clock::now());
    return std::clamp(left, milliseconds(1), options_.otlp.timeout);
  }

  bool may_wait(milliseconds pause) {
    std::scoped_lock lock(mutex_);
    return !(stopping_ && clock::now() + pause >= deadline_);
  }

  bool urgent() {
    std::scoped_lock lock(mutex_);
    return stopping_ || requested_ > completed_;
  }

  bool stopping() {
    std::scoped_lock lock(mutex_);
    return stopping_;
  }

  std::uint64_t requests_now() {
    std::scoped_lock lock(mutex_);
    return requested_;
  }

  void complete(std::uint64_t served) {
    {
      std::scoped_lock lock(mutex_);
      completed_ = std::max(completed_, served);
    }
    done_.notify_all();
  }

  void finish() {
    {
      std::scoped_lock lock(mutex_);
      finished_ = true;
    }
    done_.notify_all();
  }

  bool wait_finished(milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return done_.wait_for(lock, timeout, [&] { return finished_; });
  }

  void wake_worker() noexcept {
    try {
      asio::post(io_, [this] { wake_.cancel(); });
    } catch (...) {
      // Out of memory: the interval wakes the loop instead.
    }
  }

  const otlp_metric_exporter_options options_;
  const std::shared_ptr<const meter> source_;
  // Declared before the io_context: coroutine frames that the io_context
  // destroys (after a forced stop) still refer to it.
  detail::otlp_transport transport_;
  asio::cancellation_signal cancel_;
  asio::io_context io_{1};
  asio::steady_timer wake_{io_};

  mutable std::mutex mutex_;
  std::condition_variable done_;
  metric_exporter_counters counters_;
  std::uint64_t requested_ = 0;  // force_flush calls
  std::uint64_t completed_ = 0;  // of them, served by a finished export
  bool stopping_ = false;
  bool finished_ = false;
  clock::time_point deadline_{};

  std::mutex join_mutex_;
  std::thread worker_;
};

otlp_metric_exporter::otlp_metric_exporter(std::shared_ptr<const meter> source, otlp_metric_exporter_options options)
    : impl_(std::make_unique<impl>(std::move(source), std::move(options))) {}
otlp_metric_exporter::~otlp_metric_exporter() = default;
bool otlp_metric_exporter::force_flush(milliseconds timeout) { return impl_->force_flush(timeout); }
void otlp_metric_exporter::shutdown(milliseconds timeout) { impl_->shutdown(timeout); }
metric_exporter_counters otlp_metric_exporter::counters() const { return impl_->counters(); }

}  // namespace switchboard::telemetry
