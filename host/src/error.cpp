#include <switchboard/host/error.hpp>

namespace switchboard::host {
namespace {

class category final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "switchboard.host"; }
  std::string message(int code) const override { return std::string(to_string(static_cast<host_errc>(code))); }
};

}  // namespace

std::string_view to_string(host_errc code) noexcept {
  switch (code) {
    case host_errc::missing_path: return "missing_path";
    case host_errc::bad_workflow: return "bad_workflow";
    case host_errc::bad_store_url: return "bad_store_url";
    case host_errc::mcp_server_failed: return "mcp_server_failed";
  }
  return "unknown";
}

const boost::system::error_category& host_category() noexcept {
  static const category instance;
  return instance;
}

}  // namespace switchboard::host
