// Errors of the host library (opening a workflow directory, its model and
// its store), wired into boost::system::error_code (and through it
// std::error_code), and the exception that carries them.
//
// The code says whose mistake it is, so a program can answer in kind (the
// command line exits 2 for a missing_path, 1 for the others); what() names
// the file, the directory or the URL that was wrong.
//
// Thread-safety: value types; the category is stateless.
#pragma once

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace switchboard::host {

enum class host_errc {
  missing_path = 1,  // a file or directory the invoker's settings name does not exist
  bad_workflow,      // the workflow file, or something it names, is missing or cannot be loaded
  bad_store_url,     // a store URL that names no known backend, or lacks its path
  mcp_server_failed, // an MCP server the workflow file or the settings name could not be started or reached
};

// "missing_path", "bad_workflow", ...: the stable type string.
std::string_view to_string(host_errc code) noexcept;

const boost::system::error_category& host_category() noexcept;

inline boost::system::error_code make_error_code(host_errc code) noexcept {
  return {static_cast<int>(code), host_category()};
}

class host_error : public boost::system::system_error {
 public:
  host_error(host_errc code, const std::string& message)
      : boost::system::system_error(make_error_code(code), message), message_(message) {}

  host_errc errc() const noexcept { return static_cast<host_errc>(code().value()); }
  // The message alone, without system_error's category suffix: it already
  // names what was wrong.
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace switchboard::host

template <>
struct boost::system::is_error_code_enum<switchboard::host::host_errc> : std::true_type {};
