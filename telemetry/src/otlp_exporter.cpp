#include <switchboard/telemetry/otlp_exporter.hpp>

#include <switchboard/net/error.hpp>
#include <switchboard/net/http_client.hpp>
#include <switchboard/net/http_header.hpp>
#include <switchboard/net/http_options.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

namespace switchboard::telemetry {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What one request came to.
struct attempt_outcome {
  bool delivered = false;
  bool retryable = false;
  std::optional<milliseconds> retry_after;
  std::uint64_t rejected = 0;  // spans a 2xx's partialSuccess says were rejected
  std::string what;  // for the log: a status or the HTTP client's (redacted) message
};

bool retryable_status(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

// Retry-After as delta-seconds; an HTTP date or garbage is ignored (the
// back-off applies).
std::optional<milliseconds> parse_retry_after(std::optional<std::string_view> header) {
  if (!header) return std::nullopt;
  std::string_view text = *header;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::uint64_t seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  constexpr std::uint64_t a_day = 24 * 3600;
  return std::chrono::seconds(std::min(seconds, a_day));
}

// A 2xx may carry {"partialSuccess": {"rejectedSpans": "2", "errorMessage": ...}}
// (rejectedSpans is an int64: a string in OTLP/JSON, a number from some
// collectors). Anything unreadable counts as nothing rejected.
std::uint64_t rejected_spans(const std::string& body) {
  boost::system::error_code ec;
  const boost::json::value answer = boost::json::parse(body, ec);
  if (ec || !answer.is_object()) return 0;
  const boost::json::value* partial = answer.as_object().if_contains("partialSuccess");
  if (partial == nullptr || !partial->is_object()) return 0;
  const boost::json::value* rejected = partial->as_object().if_contains("rejectedSpans");
  if (rejected == nullptr) return 0;
  if (rejected->is_int64()) return static_cast<std::uint64_t>(std::max<std::int64_t>(0, rejected->as_int64()));
  if (rejected->is_uint64()) return rejected->as_uint64();
  if (!rejected->is_string()) return 0;
  std::uint64_t count = 0;
  const boost::json::string& text = rejected->as_string();
  std::from_chars(text.data(), text.data() + text.size(), count);
  return count;
}

net::http_options client_options(const otlp_exporter_options& options) {
  net::http_options out;
  out.base_url = options.endpoint;
  out.connect_timeout = options.timeout;
  out.request_timeout = options.timeout;
  out.retry.max_attempts = 1;  // the exporter retries itself: it counts, and knows its deadline
  out.verify_peer = options.verify_peer;
  out.ca_file = options.ca_file;
  out.max_connections_per_host = 2;
  out.max_response_bytes = 64 * 1024;  // a collector answers {} or a partialSuccess
  out.user_agent = "switchboard-otlp/0.1";
  return out;
}

void check_limits(const otlp_exporter_options& options) {
  if (options.max_queue_size == 0 || options.max_export_batch_size == 0 || options.max_attempts < 1 ||
      options.timeout <= milliseconds::zero())
    throw std::invalid_argument(
        "otlp exporter: max_queue_size, max_export_batch_size, max_attempts and timeout must be positive");
}

net::http_client make_client(const otlp_exporter_options& options) {
  try {
    return net::http_client(client_options(options), "otlp");
  } catch (const net::net_error& error) {
    throw std::invalid_argument(std::string("otlp exporter endpoint: ") + error.what());
  }
}

}  // namespace

class otlp_exporter::impl {
 public:
  explicit impl(otlp_exporter_options options)
      : options_((check_limits(options), std::move(options))), client_(make_client(options_)) {
    for (const auto& [name, value] : options_.headers) headers_.push_back(net::http_header{name, value, true});
    asio::co_spawn(io_, run(), asio::bind_cancellation_slot(cancel_.slot(), [this](std::exception_ptr error) {
                     if (error) log_loop_error(error);
                     finish();
                   }));
    worker_ = std::thread([this] { io_.run(); });
  }

  ~impl() { shutdown(options_.shutdown_timeout); }

  void on_end(span_data&& finished) noexcept {
    bool wake = false;
    {
      std::scoped_lock lock(mutex_);
      if (stopping_ || queue_.size() >= options_.max_queue_size) {
        ++counters_.dropped;
        return;
      }
      queue_.push_back(std::move(finished));
      ++accepted_;
      wake = queue_.size() >= options_.max_export_batch_size && !wake_posted_;
      if (wake) wake_posted_ = true;
    }
    if (wake) wake_worker();
  }

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
        std::vector<span_data> batch = take_batch();
        if (batch.empty()) break;
        co_await export_batch(batch);
        const asio::cancellation_state after = co_await asio::this_coro::cancellation_state;
        if (after.cancelled() != asio::cancellation_type::none) co_return;
      }
      if (stopping()) co_return;
    }
  }

  asio::awaitable<void> export_batch(const std::vector<span_data>& batch) {
    const std::string body = encode_otlp_traces(options_.resource, options_.scope, batch);
    for (int attempt = 1;; ++attempt) {
      const attempt_outcome outcome = co_await send(body);
      if (outcome.delivered) {
        const std::size_t rejected = std::min<std::uint64_t>(outcome.rejected, batch.size());
        if (rejected != 0)
          spdlog::warn("otlp exporter: the collector rejected {} of {} spans", rejected, batch.size());
        settle(batch.size() - rejected, rejected);
        co_return;
      }
      const std::optional<milliseconds> pause = retry_delay(outcome, attempt);
      if (!pause) {
        spdlog::warn("otlp exporter: {} spans not exported after {} attempt(s): {}", batch.size(), attempt,
                     outcome.what);
        settle(0, batch.size());
        co_return;
      }
      count_retry();
      asio::steady_timer timer(io_, *pause);
      const auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      if (ec) {  // cancelled at shutdown
        settle(0, batch.size());
        co_return;
      }
    }
  }

  asio::awaitable<attempt_outcome> send(const std::string& body) {
    static constexpr std::string_view wanted_headers[] = {"retry-after"};
    net::http_request request;
    request.method = net::http_method::post;
    request.body = body;
    request.headers = headers_;
    request.response_headers = wanted_headers;
    request.timeout = attempt_timeout();
    request.retry = net::retry_scope::none;
    count_request();
    attempt_outcome outcome;
    try {
      const net::http_result result = co_await client_.request(request);
      outcome.delivered = result.status >= 200 && result.status < 300;
      outcome.retryable = retryable_status(result.status);
      outcome.retry_after = parse_retry_after(result.header("retry-after"));
      if (outcome.delivered) outcome.rejected = rejected_spans(result.body);
      outcome.what = "HTTP " + std::to_string(result.status);
    } catch (const net::net_error& error) {
      // Refused, reset, timed out: the collector may be back soon. Not a
      // cancellation (the shutdown's), nor a certificate that is not
      // trusted: another attempt would meet the same certificate.
      outcome.retryable = error.errc() != net::net_errc::cancelled &&
                          error.errc() != net::net_errc::tls_verification_failed;
      outcome.what = error.what();
    } catch (const std::exception& error) {
      // Not the network's: out of memory, or a cancellation that surfaced
      // as Asio's own error. Another attempt would not fare better.
      outcome.what = error.what();
    }
    co_return outcome;
  }

  // When to try again, or nullopt to give up: a final answer, the last
  // attempt, or a retry that would start after the shutdown's deadline.
  std::optional<milliseconds> retry_delay(const attempt_outcome& outcome, int attempt) {
    if (!outcome.retryable || attempt >= options_.max_attempts) return std::nullopt;
    milliseconds pause = outcome.retry_after ? std::min(*outcome.retry_after, options_.max_retry_after)
                                             : backoff(attempt);
    std::scoped_lock lock(mutex_);
    if (stopping_ && clock::now() + pause >= shutdown_deadline_) return std::nullopt;
    return pause;
  }

  milliseconds backoff(int attempt) {
    double delay = static_cast<double>(options_.initial_backoff.count());
    for (int i = 1; i < attempt; ++i) delay *= 2.0;
    delay = std::min(delay, static_cast<double>(options_.max_backoff.count()));
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    return milliseconds(static_cast<std::int64_t>(delay * jitter(random_)));
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
    if (queue_.empty()) return stopping_;
    return stopping_ || queue_.size() >= options_.max_export_batch_size || flush_until_ > settled_count();
  }

  bool stopping() {
    std::scoped_lock lock(mutex_);
    return stopping_;
  }

  std::vector<span_data> take_batch() {
    std::scoped_lock lock(mutex_);
    const std::size_t count = std::min(queue_.size(), options_.max_export_batch_size);
    std::vector<span_data> batch(std::make_move_iterator(queue_.begin()),
                                 std::make_move_iterator(queue_.begin() + static_cast<std::ptrdiff_t>(count)));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(count));
    in_flight_ = count;
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
      abandoned = queue_.size() + in_flight_;
      counters_.failed += abandoned;
      queue_.clear();
      in_flight_ = 0;
      finished_ = true;
    }
    settled_.notify_all();
    if (abandoned != 0) spdlog::warn("otlp exporter: {} spans not exported by the end of the shutdown", abandoned);
  }

  const otlp_exporter_options options_;
  std::vector<net::http_header> headers_;  // views of options_.headers
  // Declared before the io_context: coroutine frames that the io_context
  // destroys (after a forced stop) still refer to them.
  net::http_client client_;
  asio::cancellation_signal cancel_;
  asio::io_context io_{1};
  asio::steady_timer wake_{io_};
  std::mt19937_64 random_{std::random_device{}()};

  mutable std::mutex mutex_;
  std::condition_variable settled_;
  std::deque<span_data> queue_;
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
