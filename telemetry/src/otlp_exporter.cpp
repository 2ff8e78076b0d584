#include <switchboard/telemetry/otlp_exporter.hpp>

#include "otlp_span_text.hpp"
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

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace switchboard::telemetry {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Spans encoded as the request body they will go in, still without its end.
struct queued_batch {
  std::string body;
  std::size_t spans = 0;
};

// A span's text is about 1 KiB; a thread that encoded a huge one does not
// keep that memory for good.
constexpr std::size_t max_kept_scratch_bytes = 1024 * 1024;

// A new batch reserves what the largest so far needed, up to this.
constexpr std::size_t max_reserved_batch_bytes = 4 * 1024 * 1024;

}  // namespace

class otlp_exporter::impl {
 public:
  explicit impl(otlp_exporter_options options)
      : options_(std::move(options)), transport_(options_, "rejectedSpans") {
    asio::co_spawn(io_, run(), asio::bind_cancellation_slot(cancel_.slot(), [this](std::exception_ptr error) {
                     if (error) log_loop_error(error);
                     finish();
                   }));
    worker_ = std::thread([this] { io_.run(); });
  }

  ~impl() { shutdown(options_.shutdown_timeout); }

  // The span is encoded here, on the thread that ended it, and appended to
  // the text of the batch it will go in: its memory is then freed on the
  // thread that allocated it. Freed on the exporter's thread, a span's
  // dozen allocations made both threads wait on malloc's arena lock, which
  // cost more than recording the span.
  void on_end(span_data&& finished) noexcept {
    // A span that would be dropped is not encoded first (a collector that is
    // down fills the queue); the check under the lock below is the one that counts.
    if (queued_.load(std::memory_order_relaxed) >= options_.max_queue_size) {
      count_dropped();
      return;
    }
    bool wake = false;
    try {
      span_scratch scratch;
      const std::string_view text = detail::write_otlp_span(scratch.buffer(), finished);
      std::scoped_lock lock(mutex_);
      if (stopping_ || queued_.load(std::memory_order_relaxed) >= options_.max_queue_size) {
        ++counters_.dropped;
        return;
      }
      append_to_last_batch(text);
      queued_.fetch_add(1, std::memory_order_relaxed);
      ++accepted_;
      wake = queued_.load(std::memory_order_relaxed) >= options_.max_export_batch_size && !wake_posted_;
      if (wake) wake_posted_ = true;
    } catch (...) {
      // Out of memory: the span is lost and counted, the hub goes on.
      count_dropped();
      return;
    }
    if (wake) wake_worker();
  }

  // All or nothing: a batch is never left with half a span (an append that
  // runs out of memory is undone), so one lost span cannot spoil the others.
  void append_to_last_batch(std::string_view text) {
    if (queue_.empty() || queue_.back().spans >= options_.max_export_batch_size) {
      queued_batch batch;
      // Sized like the largest batch so far, so that it is not copied as it
      // grows while other threads wait for the lock.
      batch.body.reserve(std::max(last_batch_bytes_, body_prefix_.size() + text.size()));
      batch.body.append(body_prefix_).append(text);
      batch.spans = 1;
      queue_.push_back(std::move(batch));
      return;
    }
    queued_batch& last = queue_.back();
    const std::size_t before = last.body.size();
    try {
      last.body.append(",").append(text);
    } catch (...) {
      last.body.resize(before);
      throw;
    }
    ++last.spans;
  }

  void count_dropped() noexcept {
    std::scoped_lock lock(mutex_);
    ++counters_.dropped;
  }

  // Each thread's buffer for encoding a span, kept between its spans and
  // given back when it grew large. A thread whose buffer is already
  // destroyed (a span ended by another thread-local's destructor) gets a
  // buffer of its own for the one span.
  class span_scratch {
   public:
    span_scratch() : kept_(scratch_alive ? &kept_scratch().text : nullptr) {}
    ~span_scratch() {
      if (kept_ != nullptr && kept_->size() > max_kept_scratch_bytes) std::string().swap(*kept_);
    }
    span_scratch(const span_scratch&) = delete;
    span_scratch& operator=(const span_scratch&) = delete;
    std::string& buffer() { return kept_ != nullptr ? *kept_ : own_; }

   private:
    struct holder {
      std::string text;
      ~holder() { scratch_alive = false; }
    };
    static holder& kept_scratch() {
      thread_local holder kept;
      return kept;
    }
    static inline thread_local bool scratch_alive = true;  // trivial: never destroyed

    std::string* kept_;
    std::string own_;
  };

  bool force_flush(milliseconds timeout) {
    std::unique_lock lock(mutex_);
    const std::uint64_t target = accepted_;
    flush_until_ = std::max(flush_until_, target);
    const bool post_wake = !wake_posted_;
    wake_posted_ = true;
    lock.unlock();
    if (post_wake) wake_worker();
    lock.lock();
    return settled_.wait_for(lock, timeout, [&] { return settled_count() >= target || finished_; });
  }

  void shutdown(milliseconds timeout) {
    {
      std::unique_lock lock(mutex_);
      if (stopping_) {
        lock.unlock();
        join_worker();
        return;
      }
      stopping_ = true;
      shutdown_deadline_ = clock::now() + timeout;
      wake_posted_ = true;
    }
    wake_worker();
    if (!wait_finished(timeout)) {
      // The collector holds the last request (or a back-off runs): cancel it.
      asio::post(io_, [this] { cancel_.emit(asio::cancellation_type::terminal); });
      // Cancellation ends the loop at once; the io_context is stopped only
      // should something not honour it.
      if (!wait_finished(milliseconds(500))) io_.stop();
    }
    join_worker();
    give_up_on_what_is_left();
  }

  exporter_counters counters() const {
    std::scoped_lock lock(mutex_);
    return counters_;
  }

 private:
  // --- the export loop, on the exporter's thread ---------------------------

  asio::awaitable<void> run() {
    while (true) {
      if (!urgent()) {
        wake_.expires_after(options_.schedule_delay);
        co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
      }
      const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
      if (state.cancelled() != asio::cancellation_type::none) co_return;
      while (true) {
        queued_batch batch = take_batch();
        if (batch.spans == 0) break;
        co_await export_batch(batch);
        const asio::cancellation_state after = co_await asio::this_coro::cancellation_state;
        if (after.cancelled() != asio::cancellation_type::none) co_return;
      }
      if (stopping()) co_return;
    }
  }

  asio::awaitable<void> export_batch(queued_batch& batch) {
    batch.body.append(detail::otlp_traces_suffix);
    const detail::delivery_hooks hooks{[this] { return attempt_timeout(); },
                                       [this](milliseconds pause) { return may_wait(pause); },
                                       [this] { count_request(); }, [this] { count_retry(); }};
    const detail::delivery outcome = co_await transport_.deliver(io_, batch.body, hooks);
    if (!outcome.delivered) {
      spdlog::warn("otlp exporter: {} spans not exported after {} attempt(s): {}", batch.spans, outcome.attempts,
                   outcome.what);
      settle(0, batch.spans);
      co_return;
    }
    const std::size_t rejected = std::min<std::uint64_t>(outcome.rejected, batch.spans);
    if (rejected != 0) spdlog::warn("otlp exporter: the collector rejected {} of {} spans", rejected, batch.spans);
    settle(batch.spans - rejected, rejected);
  }

  // A retry that would start after the shutdown's deadline is given up.
  bool may_wait(milliseconds pause) {
    std::scoped_lock lock(mutex_);
    return !(stopping_ && clock::now() + pause >= shutdown_deadline_);
  }

  // The request's own timeout, shortened to what is left before the
  // shutdown's deadline.
  milliseconds attempt_timeout() {
    std::scoped_lock lock(mutex_);
    if (!stopping_) return options_.timeout;
    const auto left = std::chrono::duration_cast<milliseconds>(shutdown_deadline_ - clock::now());
    return std::clamp(left, milliseconds(1), options_.timeout);
  }

  // --- shared state --------------------------------------------------------

  bool urgent() {
    std::scoped_lock lock(mutex_);
    wake_posted_ = false;
    const std::size_t queued = queued_.load(std::memory_order_relaxed);
    if (queued == 0) return stopping_;
    return stopping_ || queued >= options_.max_export_batch_size || flush_until_ > settled_count();
  }

  bool stopping() {
    std::scoped_lock lock(mutex_);
    return stopping_;
  }

  queued_batch take_batch() {
    std::scoped_lock lock(mutex_);
    if (queue_.empty()) return {};
    queued_batch batch = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(batch.spans, std::memory_order_relaxed);
    in_flight_ = batch.spans;
    last_batch_bytes_ = std::min(std::max(last_batch_bytes_, batch.body.size()), max_reserved_batch_bytes);
    return batch;
  }

  void settle(std::size_t exported, std::size_t failed) {
    {
      std::scoped_lock lock(mutex_);
      counters_.exported += exported;
      counters_.failed += failed;
      in_flight_ = 0;
    }
    settled_.notify_all();
  }

  void count_retry() {
    std::scoped_lock lock(mutex_);
    ++counters_.retries;
  }

  void count_request() {
    std::scoped_lock lock(mutex_);
    ++counters_.requests;
  }

  std::uint64_t settled_count() const { return counters_.exported + counters_.failed; }

  void wake_worker() noexcept {
    try {
      asio::post(io_, [this] { wake_.cancel(); });
    } catch (...) {
      // Out of memory: the schedule delay wakes the loop instead.
    }
  }

  static void log_loop_error(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::error("otlp exporter: the export loop stopped: {}; spans are queued until dropped", e.what());
    } catch (...) {
      spdlog::error("otlp exporter: the export loop stopped; spans are queued until dropped");
    }
  }

  void finish() {
    {
      std::scoped_lock lock(mutex_);
      finished_ = true;
    }
    settled_.notify_all();
  }

  bool wait_finished(milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return settled_.wait_for(lock, timeout, [&] { return finished_; });
  }

  void join_worker() {
    std::scoped_lock lock(join_mutex_);
    if (worker_.joinable()) worker_.join();
  }

  // After the loop: the queue, and a batch whose request was cut, failed.
  void give_up_on_what_is_left() {
    std::uint64_t abandoned = 0;
    {
      std::scoped_lock lock(mutex_);
      abandoned = queued_.load(std::memory_order_relaxed) + in_flight_;
      counters_.failed += abandoned;
      queue_.clear();
      queued_.store(0, std::memory_order_relaxed);
      in_flight_ = 0;
      finished_ = true;
    }
    settled_.notify_all();
    if (abandoned != 0) spdlog::warn("otlp exporter: {} spans not exported by the end of the shutdown", abandoned);
  }

  const otlp_exporter_options options_;
  // Declared before the io_context: coroutine frames that the io_context
  // destroys (after a forced stop) still refer to it.
  detail::otlp_transport transport_;
  // The text every request body starts with (the resource and the scope).
  const std::string body_prefix_ = detail::otlp_traces_prefix(options_.resource, options_.scope);
  asio::cancellation_signal cancel_;
  asio::io_context io_{1};
  asio::steady_timer wake_{io_};

  mutable std::mutex mutex_;
  std::condition_variable settled_;
  // Batches of encoded spans, each at most max_export_batch_size; the last
  // one is being filled.
  std::deque<queued_batch> queue_;
  // Spans in queue_: changed under the mutex only; read without it to drop
  // a span before encoding it.
  std::atomic<std::size_t> queued_{0};
  std::size_t last_batch_bytes_ = 0;  // the largest batch body so far, at most max_reserved_batch_bytes
  std::size_t in_flight_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t flush_until_ = 0;
  exporter_counters counters_;
  bool wake_posted_ = false;
  bool stopping_ = false;
  bool finished_ = false;
  clock::time_point shutdown_deadline_{};

  std::mutex join_mutex_;
  std::thread worker_;
};

otlp_exporter::otlp_exporter(otlp_exporter_options options) : impl_(std::make_unique<impl>(std::move(options))) {}
otlp_exporter::~otlp_exporter() = default;
void otlp_exporter::on_end(span_data&& finished) noexcept { impl_->on_end(std::move(finished)); }
bool otlp_exporter::force_flush(std::chrono::milliseconds timeout) { return impl_->force_flush(timeout); }
void otlp_exporter::shutdown(std::chrono::milliseconds timeout) { impl_->shutdown(timeout); }
exporter_counters otlp_exporter::counters() const { return impl_->counters(); }

}  // namespace switchboard::telemetry
