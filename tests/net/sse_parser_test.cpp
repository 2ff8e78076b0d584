// The event-stream parser: framing by the WHATWG rules, bytes cut anywhere,
// comments ignored, and its limits.
#include <switchboard/net/sse_parser.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchboard::net {
namespace {

struct collected : sse_handler {
  struct one {
    std::string type, data, id;
    bool operator==(const one&) const = default;
  };
  std::vector<one> events;
  void on_event(const sse_event& e) override { events.push_back({std::string(e.type), std::string(e.data), std::string(e.id)}); }
};

std::vector<collected::one> parse_whole(std::string_view text) {
  sse_parser parser;
  collected out;
  EXPECT_EQ(parser.feed(text, out), sse_status::ok);
  return out.events;
}

TEST(sse_parser, events_fields_comments_and_line_ends) {
  const auto events = parse_whole(
      ": keep-alive\n\n"
      "event: message_start\ndata: {\"a\":1}\n\n"
      "data: one\r\ndata:two\r\n\r\n"
      "id: 7\rdata: three\r\r"
      "retry: 100\nunknown: x\ndata\n\n"
      "event: lonely\n\n");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0], (collected::one{"message_start", "{\"a\":1}", ""}));
  EXPECT_EQ(events[1], (collected::one{"", "one\ntwo", ""}));
  EXPECT_EQ(events[2], (collected::one{"", "three", "7"}));
  EXPECT_EQ(events[3], (collected::one{"", "", ""}));  // "data" alone: an empty data line
}

TEST(sse_parser, a_byte_order_mark_is_skipped_even_when_cut) {
  sse_parser parser;
  collected out;
  const std::string text = "\xEF\xBB\xBF" "data: x\n\n";
  for (char c : text) ASSERT_EQ(parser.feed(std::string_view(&c, 1), out), sse_status::ok);
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].data, "x");
}

TEST(sse_parser, every_cut_of_the_input_gives_the_same_events) {
  const std::string text =
      ": ping\r\n\r\nevent: a\r\ndata: {\"text\":\"Gr\xC3\xBC\xC3\x9F" "e \xF0\x9F\x8C\x8D\"}\r\n\r\n"
      "data: [DONE]\n\ndata: tail-without-end";
  const auto whole = parse_whole(text);
  ASSERT_EQ(whole.size(), 2u);
  for (std::size_t a = 1; a < text.size(); ++a) {
    for (std::size_t b = a; b < text.size(); b += 7) {
      sse_parser parser;
      collected out;
      ASSERT_EQ(parser.feed(std::string_view(text).substr(0, a), out), sse_status::ok);
      ASSERT_EQ(parser.feed(std::string_view(text).substr(a, b - a), out), sse_status::ok);
      ASSERT_EQ(parser.feed(std::string_view(text).substr(b), out), sse_status::ok);
      ASSERT_EQ(out.events, whole) << "cut at " << a << " and " << b;
      EXPECT_TRUE(parser.mid_event());  // the last event never ended
    }
  }
}

TEST(sse_parser, a_cr_at_the_end_of_a_read_and_its_lf_in_the_next_make_one_line_end) {
  sse_parser parser;
  collected out;
  ASSERT_EQ(parser.feed("data: a\r", out), sse_status::ok);
  ASSERT_EQ(parser.feed("\n\r", out), sse_status::ok);
  ASSERT_EQ(out.events.size(), 1u);  // "\r\n" then "\r": one line end, then the blank line
  ASSERT_EQ(parser.feed("\ndata: b\n\n", out), sse_status::ok);
  ASSERT_EQ(out.events.size(), 2u);
  EXPECT_EQ(out.events[1].data, "b");
}

TEST(sse_parser, limits_stop_the_parser) {
  sse_parser lines({.max_line_bytes = 16, .max_event_bytes = 1024});
  collected out;
  EXPECT_EQ(lines.feed("data: 0123456789", out), sse_status::ok);
  EXPECT_EQ(lines.feed("abcdef", out), sse_status::line_too_long);  // cut lines count whole
  EXPECT_EQ(lines.feed("\n\n", out), sse_status::line_too_long);    // and it stays failed

  sse_parser events({.max_line_bytes = 64, .max_event_bytes = 20});
  EXPECT_EQ(events.feed("data: 0123456789\ndata: 0123456789\n\n", out), sse_status::event_too_large);
  EXPECT_TRUE(out.events.empty());
  events.reset();
  EXPECT_EQ(events.feed("data: ok\n\n", out), sse_status::ok);
  EXPECT_EQ(out.events.size(), 1u);
}

TEST(sse_parser, an_exception_from_the_handler_leaves_feed) {
  struct throwing : sse_handler {
    void on_event(const sse_event&) override { throw std::runtime_error("no"); }
  } handler;
  sse_parser parser;
  EXPECT_THROW(parser.feed("data: x\n\n", handler), std::runtime_error);
}

}  // namespace
}  // namespace switchboard::net
