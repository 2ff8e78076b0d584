#include <switchboard/models/chat_model.hpp>
#include <switchboard/models/model_error.hpp>

namespace switchboard::models {

std::string_view to_string(model_errc code) noexcept {
  switch (code) {
    case model_errc::connect_failed: return "connect_failed";
    case model_errc::connection_lost: return "connection_lost";
    case model_errc::tls_verification_failed: return "tls_verification_failed";
    case model_errc::timeout: return "timeout";
    case model_errc::cancelled: return "cancelled";
    case model_errc::http_status: return "http_status";
    case model_errc::response_too_large: return "response_too_large";
    case model_errc::invalid_response: return "invalid_response";
    case model_errc::structured_output_failed: return "structured_output_failed";
    case model_errc::token_budget_exhausted: return "token_budget_exhausted";
    case model_errc::not_configured: return "not_configured";
    case model_errc::unknown_request: return "unknown_request";
    case model_errc::script_exhausted: return "script_exhausted";
  }
  return "unknown_error";
}

std::string_view to_string(chat_role role) noexcept {
  switch (role) {
    case chat_role::system: return "system";
    case chat_role::user: return "user";
    case chat_role::assistant: return "assistant";
    case chat_role::tool: return "tool";
  }
  return "user";
}

std::string_view to_string(output_mode mode) noexcept {
  switch (mode) {
    case output_mode::json_schema: return "json_schema";
    case output_mode::json_object: return "json_object";
    case output_mode::prompt_schema: return "prompt_schema";
  }
  return "prompt_schema";
}

namespace {

class model_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.model"; }
  std::string message(int value) const override {
    return std::string(to_string(static_cast<model_errc>(value)));
  }
};

}  // namespace

const boost::system::error_category& model_category() noexcept {
  static const model_category_impl category;
  return category;
}

}  // namespace switchboard::models
