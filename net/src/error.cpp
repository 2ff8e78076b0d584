#include <switchboard/net/error.hpp>

#include <string>

namespace switchboard::net {

std::string_view to_string(net_errc code) noexcept {
  switch (code) {
    case net_errc::connect_failed: return "connect_failed";
    case net_errc::connection_lost: return "connection_lost";
    case net_errc::tls_verification_failed: return "tls_verification_failed";
    case net_errc::timeout: return "timeout";
    case net_errc::cancelled: return "cancelled";
    case net_errc::http_status: return "http_status";
    case net_errc::response_too_large: return "response_too_large";
    case net_errc::invalid_response: return "invalid_response";
    case net_errc::invalid_options: return "invalid_options";
  }
  return "unknown";
}

namespace {

class category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.net"; }
  std::string message(int value) const override { return std::string(to_string(static_cast<net_errc>(value))); }
};

}  // namespace

const boost::system::error_category& net_category() noexcept {
  static const category instance;
  return instance;
}

}  // namespace switchboard::net
