// Runs the built `switchboard` binary as a user would, for every test of
// the command line: through the shell, in a given directory, with standard
// input from a file, in an environment the developer's own configuration
// cannot reach, and returns the exit status with what it printed. Also the
// check that what it printed holds nothing a terminal would act on.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::test {

// The built tool.
inline const std::filesystem::path switchboard_binary =
    std::filesystem::path(SWITCHBOARD_BINARY_DIR) / "bin" / "switchboard";

struct cli_result {
  int exit_code = -1;
  std::string out;  // standard output (with standard error too when merged)
  std::string err;  // standard error when not merged
};

inline std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// `words`, each quoted, joined by spaces.
inline std::string shell_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + shell_quoted(word);
  return out;
}

// The command prefix every test runs the tool with ("env -u ... NAME=value"):
// each variable that would let the developer's own configuration change a
// run (a model, a provider, schemas, plugins, prompt files) cleared, and the
// state directory the test's own. A test that wants a model adds its
// assignments after it.
inline std::string isolated_environment(const std::filesystem::path& state_dir) {
  return "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_BASE_URL -u SWITCHBOARD_MODEL "
         "-u SWITCHBOARD_PROVIDER -u SWITCHBOARD_OUTPUT_MODE -u SWITCHBOARD_SCHEMA_PATH -u SWITCHBOARD_PLUGIN_PATH "
         "-u SWITCHBOARD_PROMPT_PATH SWITCHBOARD_STATE_DIR=" +
         shell_quoted(state_dir.string());
}

inline std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `switchboard <arguments>` in `dir`. `arguments` are already quoted
// (shell_words quotes a list); `environment` (isolated_environment, and
// "NAME=value" assignments, quoted) is set for the command only. With
// `merge_stderr` standard error goes into `out` as well; otherwise it goes
// to `dir`/stderr.txt and into `err`.
inline cli_result run_switchboard(const std::filesystem::path& dir, const std::string& arguments,
                                  const std::filesystem::path& stdin_file, bool merge_stderr = true,
                                  const std::string& environment = "") {
  const std::string command = "cd " + shell_quoted(dir.string()) + " && " + environment + " " +
                              shell_quoted(switchboard_binary.string()) + " " + arguments + " < " +
                              shell_quoted(stdin_file.string()) + (merge_stderr ? " 2>&1" : " 2> stderr.txt");
  cli_result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!merge_stderr) result.err = file_text(dir / "stderr.txt");
  return result;
}

// The first thing in `output` a terminal would act on — a C0 control other
// than LF, DEL, a C1 control, a bidi embedding, override or isolate, a line or
// paragraph separator — or that is not UTF-8, as "<what> at byte <offset>";
// "" when there is none. Written apart from the escaping code so that a
// test of it does not share its mistakes.
inline std::string find_raw_control(std::string_view output) {
  const auto at = [](std::string what, std::size_t i) { return what + " at byte " + std::to_string(i); };
  for (std::size_t i = 0; i < output.size();) {
    const auto b = static_cast<unsigned char>(output[i]);
    if (b == '\n' || (b >= 0x20 && b < 0x7F)) {
      ++i;
      continue;
    }
    if (b < 0x20 || b == 0x7F) return at("control byte " + std::to_string(b), i);
    const std::size_t length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
    if (length == 0 || i + length > output.size()) return at("invalid UTF-8", i);
    char32_t c = b & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(output[i + k]);
      if ((next & 0xC0) != 0x80) return at("invalid UTF-8", i);
      c = (c << 6) | (next & 0x3F);
    }
    const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < smallest[length] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return at("invalid UTF-8", i);
    if (c <= 0x9F) return at("C1 control", i);
    if ((c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069)) return at("bidi control", i);
    if (c == 0x2028 || c == 0x2029) return at("line separator", i);
    i += length;
  }
  return {};
}

// Untrusted text with one of each thing a terminal acts on: clear screen,
// a window title (OSC ... BEL), BEL, CR, TAB, a newline followed by a forged
// log record, an 8-bit CSI (C1), a right-to-left override, an isolate, a
// line separator, DEL — and multi-byte UTF-8 that must survive unchanged.
inline const std::string hostile_text =
    "\x1b[2J\x1b]0;pwned\x07|bell\x07|cr\r|tab\t|nl\n[2026-11-25 10:00:00] [info] approved|c1 \xc2\x9b"
    "31m|bidi \xe2\x80\xae|isolate \xe2\x81\xa6|ls \xe2\x80\xa8|del\x7f|\xc3\xa9\xe6\x97\xa5\xf0\x9f\x99\x82";

// The forged record of hostile_text, as it would start a line if the
// newline before it reached the output raw.
inline constexpr std::string_view forged_record = "[2026-11-25 10:00:00] [info] approved";

// True when some line of `output` starts with `prefix`.
inline bool has_line_starting_with(std::string_view output, std::string_view prefix) {
  for (std::size_t start = 0; start <= output.size();) {
    if (output.substr(start).starts_with(prefix)) return true;
    const std::size_t end = output.find('\n', start);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return false;
}

}  // namespace switchboard::test
