#include "detail/owner.hpp"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace switchboard::orchestrator::detail {

namespace {

std::string host_name() {
  char buffer[256] = {};
  if (::gethostname(buffer, sizeof buffer - 1) != 0) return "unknown-host";
  std::string name(buffer);
  for (char& c : name) {
    if (c == ':') c = '_';  // ':' separates the fields of an owner id
  }
  return name;
}

// Field 22 of /proc/PID/stat (start time in clock ticks after boot), or "".
// The command name (field 2) may hold spaces and parentheses: fields are
// counted after its closing parenthesis.
std::string start_time_of(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return {};
  }
  return field;
}

}  // namespace

const std::string& this_process_owner_id() {
  static const std::string id = [] {
    const long pid = static_cast<long>(::getpid());
    return host_name() + ":" + std::to_string(pid) + ":" + start_time_of(pid);
  }();
  return id;
}

bool owner_is_dead_on_this_host(std::string_view owner) {
  static const std::string host = host_name();
  const auto first = owner.find(':');
  const auto second = first == std::string_view::npos ? first : owner.find(':', first + 1);
  if (second == std::string_view::npos || owner.substr(0, first) != host) return false;
  const auto pid_text = owner.substr(first + 1, second - first - 1);
  const auto start = owner.substr(second + 1);
  long pid = 0;
  const auto [end, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (ec != std::errc{} || end != pid_text.data() + pid_text.size() || pid <= 0 || start.empty()) return false;
  return start_time_of(pid) != start;  // gone, or the pid now belongs to a later process
}

}  // namespace switchboard::orchestrator::detail
