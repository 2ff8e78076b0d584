// Appends a JSON text to a string, piece by piece. Request bodies are
// written straight into one string this way, with schemas inserted as the
// text they were serialized to once, instead of building, copying and
// serializing a json::object for every request. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace switchboard::models::detail {

class json_writer {
 public:
  explicit json_writer(std::string& out) : out_(out) {}

  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(std::string_view name);

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
