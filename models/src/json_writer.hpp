// Appends a JSON text to a string, piece by piece. Request bodies are
// written straight into one string this way, with schemas inserted as the
// text they were serialized to once, instead of building, copying and
// serializing a json::object for every request. Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace switchboard::models::detail {

class json_writer {
 public:
  // A member's name: a string literal that needs no escaping, checked when
  // compiled, so that it is written as it is. Request bodies have a dozen
  // such names; escaping each at run time cost more than writing it.
  class member_name {
   public:
    template <std::size_t N>
    consteval member_name(const char (&text)[N]) : text_(text, N - 1) {  // NOLINT: implicit on purpose
      for (std::size_t i = 0; i + 1 < N; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == '"' || c == '\\') throw "a member name written as it is needs no escaping";
      }
      if (text[N - 1] != '\0') throw "a member name is a string literal";
    }
    std::string_view text() const noexcept { return text_; }

   private:
    std::string_view text_;
  };

  explicit json_writer(std::string& out) : out_(out) {}

  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(member_name name);

  json_writer& string(std::string_view text);
  json_writer& boolean(bool value);
  json_writer& number(double value);
  json_writer& number(std::int64_t value);
  // A complete JSON text, inserted as is (a schema's json_document::text()).
  json_writer& raw(std::string_view json_text);

 private:
  void separate();

  std::string& out_;
  bool need_comma_ = false;
};

// Appends `text` as a JSON string literal (quoted and escaped).
void append_json_string(std::string& out, std::string_view text);

}  // namespace switchboard::models::detail
