#include <switchboard/protocol/error.hpp>

namespace switchboard::protocol {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::empty_output: return "empty_output";
    case errc::invalid_json: return "invalid_json";
    case errc::schema_missing_field: return "schema_missing_field";
    case errc::schema_type_error: return "schema_type_error";
    case errc::schema_violation: return "schema_violation";
    case errc::invariant_violation: return "invariant_violation";
    case errc::invalid_envelope: return "invalid_envelope";
    case errc::unknown_agent: return "unknown_agent";
    case errc::unknown_schema: return "unknown_schema";
    case errc::duplicate_schema: return "duplicate_schema";
    case errc::unparsable_schema: return "unparsable_schema";
    case errc::invalid_schema_id: return "invalid_schema_id";
    case errc::truncated: return "truncated";
    case errc::refusal: return "refusal";
    case errc::content_filter: return "content_filter";
    case errc::unexpected_tool_call: return "unexpected_tool_call";
    case errc::reasoning_only: return "reasoning_only";
  }
  return "unknown_error";
}

namespace {

class protocol_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.protocol"; }
  std::string message(int value) const override {
    return std::string(to_string(static_cast<errc>(value)));
  }
};

}  // namespace

const boost::system::error_category& protocol_category() noexcept {
  static const protocol_category_impl category;
  return category;
}

}  // namespace switchboard::protocol
