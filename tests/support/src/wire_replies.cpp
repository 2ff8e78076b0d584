// How the loopback server's replies look on the wire: whole OpenAI and
// Anthropic answers, their streamed event sequences, errors, response heads
// and chunked encoding (wire_replies.hpp).
#include "wire_replies.hpp"

#include <boost/beast/http/status.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace switchboard::testing::detail {

namespace http = boost::beast::http;
namespace json = boost::json;

namespace {


enum class wire_format { openai, anthropic };

wire_format format_of(std::string_view target) {
  const auto path = target.substr(0, target.find('?'));
  return path.ends_with("/messages") ? wire_format::anthropic : wire_format::openai;
}

std::string requested_model(const json::value* request) {
  if (request && request->is_object()) {
    if (const auto* m = request->as_object().if_contains("model"); m && m->is_string()) {
      return std::string(m->as_string());
    }
  }
  return "loopback-model";
}

// The forced tool's name when an Anthropic request forces one.
std::optional<std::string> forced_tool(const json::value* request) {
  if (!request || !request->is_object()) return std::nullopt;
  const auto* choice = request->as_object().if_contains("tool_choice");
  if (!choice || !choice->is_object()) return std::nullopt;
  const auto* type = choice->as_object().if_contains("type");
  const auto* name = choice->as_object().if_contains("name");
  if (type && *type == "tool" && name && name->is_string()) return std::string(name->as_string());
  return std::nullopt;
}

json::object openai_message(const server_action& a) {
  json::object message{{"role", "assistant"}, {"content", a.content}};
  if (a.calls.empty()) return message;
  if (a.content.empty()) message["content"] = nullptr;
  json::array calls;
  for (const auto& call : a.calls) {
    calls.push_back(json::object{{"id", call.id},
                                 {"type", "function"},
                                 {"function", json::object{{"name", call.name}, {"arguments", call.arguments}}}});
  }
  message["tool_calls"] = std::move(calls);
  return message;
}

json::array anthropic_tool_blocks(const server_action& a) {
  json::array blocks;
  if (!a.content.empty()) blocks.push_back(json::object{{"type", "text"}, {"text", a.content}});
  for (const auto& call : a.calls) {
    boost::system::error_code ec;
    json::value input = json::parse(call.arguments, ec);
    if (ec) input = call.arguments;
    blocks.push_back(json::object{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}});
  }
  return blocks;
}

std::string render_openai_reply(const server_action& a, const json::value* request, std::size_t n) {
  json::object body{
      {"id", "chatcmpl-loopback-" + std::to_string(n)},
      {"object", "chat.completion"},
      {"created", 0},
      {"model", requested_model(request)},
      {"choices", json::array{json::object{
                      {"index", 0},
                      {"message", openai_message(a)},
                      {"finish_reason", a.finish_reason}}}},
      {"usage", json::object{{"prompt_tokens", a.prompt_tokens},
                             {"completion_tokens", a.completion_tokens},
                             {"total_tokens", a.prompt_tokens + a.completion_tokens}}}};
  return json::serialize(body);
}

std::string render_anthropic_reply(const server_action& a, const json::value* request, std::size_t n) {
  json::object block{{"type", "text"}, {"text", a.content}};
  std::string stop_reason = a.finish_reason == "stop" ? "end_turn" : a.finish_reason;
  if (stop_reason == "tool_calls") stop_reason = "tool_use";
  // Tool calls are rendered from the calls; a forced tool answers with the content.
  if (const auto tool = a.calls.empty() ? forced_tool(request) : std::nullopt) {
    boost::system::error_code ec;
    auto input = json::parse(a.content, ec);
    if (!ec && input.is_object()) {
      block = json::object{{"type", "tool_use"},
                           {"id", "toolu_loopback_" + std::to_string(n)},
                           {"name", *tool},
                           {"input", std::move(input)}};
      if (stop_reason == "end_turn") stop_reason = "tool_use";
    }
  }
  json::object body{{"id", "msg_loopback_" + std::to_string(n)},
                    {"type", "message"},
                    {"role", "assistant"},
                    {"model", requested_model(request)},
                    {"content", a.calls.empty() ? json::array{std::move(block)} : anthropic_tool_blocks(a)},
                    {"stop_reason", stop_reason},
                    {"usage", json::object{{"input_tokens", a.prompt_tokens},
                                           {"output_tokens", a.completion_tokens}}}};
  return json::serialize(body);
}

// --- streamed answers

// `text` in pieces of about `size` bytes, never cutting a UTF-8 character.
std::vector<std::string> pieces_of(std::string_view text, std::size_t size) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = std::min(text.size(), pos + size);
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

class event_writer {
 public:
  explicit event_writer(bool crlf) : eol_(crlf ? "\r\n" : "\n") {}
  void event(std::string_view type, const json::value& data) {
    if (!type.empty()) out_.append("event: ").append(type).append(eol_);
    out_.append("data: ").append(json::serialize(data)).append(eol_).append(eol_);
    ends_.push_back(out_.size());
  }
  void raw_line(std::string_view line) {
    out_.append(line).append(eol_).append(eol_);
    ends_.push_back(out_.size());
  }
  std::string& text() { return out_; }
  const std::vector<std::size_t>& ends() const { return ends_; }

 private:
  std::string eol_;
  std::string out_;
  std::vector<std::size_t> ends_;  // where each event ends
};

json::object openai_chunk(const std::string& model, std::size_t n, json::object delta, json::value finish) {
  return {{"id", "chatcmpl-loopback-" + std::to_string(n)},
          {"object", "chat.completion.chunk"},
          {"created", 0},
          {"model", model},
          {"choices", json::array{json::object{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}}}};
}

void render_openai_stream(event_writer& w, const server_action& a, const json::value* request, std::size_t n) {
  const std::string model = requested_model(request);
  w.raw_line(": keep-alive");
  w.event({}, openai_chunk(model, n, {{"role", "assistant"}, {"content", ""}}, nullptr));
  for (auto& piece : pieces_of(a.content, a.delta_bytes))
    w.event({}, openai_chunk(model, n, {{"content", piece}}, nullptr));
  for (std::size_t i = 0; i < a.calls.size(); ++i) {
    const auto& call = a.calls[i];
    json::object first{{"index", i}, {"id", call.id}, {"type", "function"},
                       {"function", json::object{{"name", call.name}, {"arguments", ""}}}};
    w.event({}, openai_chunk(model, n, {{"tool_calls", json::array{std::move(first)}}}, nullptr));
    for (auto& piece : pieces_of(call.arguments, a.delta_bytes)) {
      json::object next{{"index", i}, {"function", json::object{{"arguments", piece}}}};
      w.event({}, openai_chunk(model, n, {{"tool_calls", json::array{std::move(next)}}}, nullptr));
    }
  }
  w.event({}, openai_chunk(model, n, {}, json::value(a.finish_reason)));
  json::object usage{{"id", "chatcmpl-loopback-" + std::to_string(n)}, {"object", "chat.completion.chunk"},
                     {"created", 0}, {"model", model}, {"choices", json::array{}},
                     {"usage", json::object{{"prompt_tokens", a.prompt_tokens},
                                            {"completion_tokens", a.completion_tokens},
                                            {"total_tokens", a.prompt_tokens + a.completion_tokens}}}};
  w.event({}, usage);
  if (a.terminator) w.raw_line("data: [DONE]");
}

void anthropic_block(event_writer& w, std::size_t index, json::object start, std::string_view delta_type,
                     std::string_view delta_key, const std::vector<std::string>& pieces) {
  w.event("content_block_start", json::object{{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(start)}});
  for (const auto& piece : pieces) {
    w.event("content_block_delta",
            json::object{{"type", "content_block_delta"}, {"index", index},
                         {"delta", json::object{{"type", delta_type}, {delta_key, piece}}}});
  }
  w.event("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", index}});
}

void render_anthropic_stream(event_writer& w, const server_action& a, const json::value* request, std::size_t n) {
  std::string stop_reason = a.finish_reason == "stop" ? "end_turn" : a.finish_reason;
  if (stop_reason == "tool_calls") stop_reason = "tool_use";
  w.event("message_start",
          json::object{{"type", "message_start"},
                       {"message", json::object{{"id", "msg_loopback_" + std::to_string(n)}, {"type", "message"},
                                                {"role", "assistant"}, {"model", requested_model(request)},
                                                {"content", json::array{}}, {"stop_reason", nullptr},
                                                {"usage", json::object{{"input_tokens", a.prompt_tokens},
                                                                       {"output_tokens", 1}}}}}});
  w.event("ping", json::object{{"type", "ping"}});
  std::size_t index = 0;
  const auto forced = a.calls.empty() ? forced_tool(request) : std::nullopt;
  boost::system::error_code ec;
  const auto parsed = forced ? json::parse(a.content, ec) : json::value();
  if (forced && !ec && parsed.is_object()) {
    anthropic_block(w, index++,
                    {{"type", "tool_use"}, {"id", "toolu_loopback_" + std::to_string(n)}, {"name", *forced},
                     {"input", json::object{}}},
                    "input_json_delta", "partial_json", pieces_of(a.content, a.delta_bytes));
    if (stop_reason == "end_turn") stop_reason = "tool_use";
  } else if (a.calls.empty() || !a.content.empty()) {
    anthropic_block(w, index++, {{"type", "text"}, {"text", ""}}, "text_delta", "text",
                    pieces_of(a.content, a.delta_bytes));
  }
  for (const auto& call : a.calls) {
    anthropic_block(w, index++,
                    {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", json::object{}}},
                    "input_json_delta", "partial_json", pieces_of(call.arguments, a.delta_bytes));
  }
  w.event("message_delta", json::object{{"type", "message_delta"},
                                         {"delta", json::object{{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                                         {"usage", json::object{{"output_tokens", a.completion_tokens}}}});
  if (a.terminator) w.event("message_stop", json::object{{"type", "message_stop"}});
}

// The event stream and where each write ends.

}  // namespace

std::pair<std::string, std::vector<std::size_t>> render_stream(const server_action& a, std::string_view target,
                                                               std::string_view body, std::size_t n) {
  boost::system::error_code ec;
  const auto parsed = json::parse(body, ec);
  const json::value* request = ec ? nullptr : &parsed;
  event_writer w(a.crlf);
  if (format_of(target) == wire_format::anthropic) render_anthropic_stream(w, a, request, n);
  else render_openai_stream(w, a, request, n);
  std::vector<std::size_t> cuts = a.split_at.empty() ? w.ends() : a.split_at;
  std::string text = std::move(w.text());
  std::erase_if(cuts, [&](std::size_t c) { return c == 0 || c >= text.size(); });
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(text.size());
  return {std::move(text), std::move(cuts)};
}

std::string render_error(wire_format format, const std::string& message) {
  if (format == wire_format::anthropic) {
    return json::serialize(json::object{
        {"type", "error"}, {"error", json::object{{"type", "api_error"}, {"message", message}}}});
  }
  return json::serialize(json::object{
      {"error", json::object{{"message", message}, {"type", "invalid_request_error"}, {"code", nullptr}}}});
}

std::string render_body(const server_action& a, const recorded_request& req, std::size_t n) {
  const auto format = format_of(req.target);
  boost::system::error_code ec;
  const auto parsed = json::parse(req.body, ec);
  const json::value* request = ec ? nullptr : &parsed;
  switch (a.type) {
    case server_action::kind::reply:
      return format == wire_format::anthropic ? render_anthropic_reply(a, request, n)
                                              : render_openai_reply(a, request, n);
    case server_action::kind::status: return render_error(format, a.content);
    default: return a.content;
  }
}

std::string render_head(const server_action& a, int status, bool keep_alive, std::size_t length,
                        bool chunked) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " +
                     std::string(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)))) +
                     "\r\nServer: switchboard-loopback\r\nContent-Type: application/json\r\n";
  head += chunked ? std::string("Transfer-Encoding: chunked\r\n")
                  : "Content-Length: " + std::to_string(length) + "\r\n";
  head += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [name, value] : a.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  return head;
}

// The body split into three chunks (or fewer when it is short).
std::string chunk_encode(std::string_view body) {
  std::string out;
  const std::size_t piece = std::max<std::size_t>(1, (body.size() + 2) / 3);
  char size_line[32];
  for (std::size_t pos = 0; pos < body.size(); pos += piece) {
    const auto part = body.substr(pos, piece);
    std::snprintf(size_line, sizeof size_line, "%zx\r\n", part.size());
    out += size_line;
    out += part;
    out += "\r\n";
  }
  out += "0\r\n\r\n";
  return out;
}

std::string chunk_of(std::string_view piece) {
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size());
  return size_line + std::string(piece) + "\r\n";
}

}  // namespace switchboard::testing::detail
