// text_stats: a small native agent shipped as a plugin. It counts the words
// of the request in the workflow input and reports the longest one.
//
// Input: {"request": "some text", "simulate_latency_ms": 0}
//   (simulate_latency_ms is optional; it stands for slow asynchronous work
//   such as a database query and shows how an agent honours cancellation.)
// Output data (schema text_stats.output@1):
//   {"words": 3, "characters": 9, "longest_word": "some"}
#include <switchboard/agents/plugin.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace {

namespace asio = boost::asio;
using switchboard::protocol::envelope;

constexpr const char* output_schema_id = "text_stats.output@1";

boost::json::value output_schema() {
  return boost::json::parse(R"({
    "type": "object",
    "properties": {
      "words":        {"type": "integer", "minimum": 0},
      "characters":   {"type": "integer", "minimum": 0},
      "longest_word": {"type": "string"}
    },
    "required": ["words", "characters", "longest_word"],
    "additionalProperties": false
  })");
}

class text_stats_agent final : public switchboard::agents::agent {
 public:
  std::string_view name() const noexcept override { return "text_stats"; }
  std::string_view description() const noexcept override {
    return "Counts the words and characters of the request and names its longest word.";
  }
  std::string output_schema() const override { return output_schema_id; }

  asio::awaitable<envelope> run(switchboard::agents::agent_context& context) override {
    const auto* input = context.input.if_object();
    const auto* request = input ? input->if_contains("request") : nullptr;
    if (!request || !request->is_string()) {
      // A clear, routable failure instead of a guess.
      co_return switchboard::protocol::make_error_envelope(
          {"invalid_input", "text_stats: the workflow input has no string member \"request\"", false, {}},
          "The request text was missing.");
    }
    if (const auto* delay = input->if_contains("simulate_latency_ms"); delay && delay->is_int64()) {
      // Awaiting on the coroutine's own executor with use_awaitable inherits
      // its cancellation slot: a cancelled workflow ends the wait with
      // operation_aborted, which propagates as an exception.
      asio::steady_timer timer(co_await asio::this_coro::executor);
      timer.expires_after(std::chrono::milliseconds(delay->get_int64()));
      co_await timer.async_wait(asio::use_awaitable);
    }

    const std::string text(request->get_string());
    std::int64_t words = 0;
    std::string longest, current;
    for (char c : text + ' ') {
      if (c == ' ' || c == '\t' || c == '\n') {
        if (!current.empty()) ++words;
        if (current.size() > longest.size()) longest = current;
        current.clear();
      } else {
        current += c;
      }
    }
    envelope out;
    std::int64_t characters = 0;  // UTF-8 code points, not bytes
    for (unsigned char c : text) characters += (c & 0xC0) != 0x80 ? 1 : 0;
    out.data = {{"words", words},
                {"characters", characters},
                {"longest_word", longest}};
    out.explanation = "The request has " + std::to_string(words) + " word(s).";
    out.confidence = 1.0;  // counting is exact
    out.reasoning = "Counted white-space separated words in /request.";
    co_return out;
  }
};

}  // namespace

SWITCHBOARD_PLUGIN(registrar) {
  registrar.add_schema(output_schema_id, output_schema());
  registrar.add(std::make_shared<text_stats_agent>());
}
