#include "schema_lookup.hpp"

#include "command.hpp"

#include <boost/json/parse.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace switchboard::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::vector<fs::path> default_schema_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("SWITCHBOARD_SCHEMA_PATH"); env && *env) {
    std::stringstream list(env);
    for (std::string dir; std::getline(list, dir, ':');) {
      if (!dir.empty()) dirs.emplace_back(dir);
    }
    return dirs;
  }
  if (fs::is_directory("schemas")) dirs.emplace_back("schemas");
  return dirs;
}

bool looks_like_path(const std::string& text) {
  return text.find('/') != std::string::npos || text.ends_with(".json");
}

protocol::compiled_schema compile_schema_file(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw usage_error("schema file '" + file + "' cannot be read");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  boost::system::error_code ec;
  const json::value schema = json::parse(text, ec);
  if (ec) throw usage_error("schema file '" + file + "' is not valid JSON: " + ec.message());
  return protocol::compiled_schema::compile(schema, fs::path(file).filename().string());
}

}  // namespace

protocol::compiled_schema resolve_schema(const std::string& file_or_name,
                                         const std::vector<fs::path>& schema_dirs,
                                         protocol::schema_registry& registry) {
  if (fs::is_regular_file(file_or_name)) return compile_schema_file(file_or_name);
  if (looks_like_path(file_or_name)) {
    throw usage_error("schema file '" + file_or_name + "' does not exist");
  }
  const auto dirs = schema_dirs.empty() ? default_schema_dirs() : schema_dirs;
  if (dirs.empty()) {
    throw usage_error("'" + file_or_name +
                      "' is not a file and no schema directory is known (use --schemas DIR or "
                      "SWITCHBOARD_SCHEMA_PATH)");
  }
  for (const auto& dir : dirs) registry.load_directory(dir);
  return registry.at(file_or_name);
}

}  // namespace switchboard::cli
