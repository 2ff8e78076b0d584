// switchboard validate — runs the structured-output parser on a model's raw
// answer and prints {ok, stage, repairs, reason, errors, value} as JSON.
//
//   switchboard validate --schema FILE_OR_NAME [--input FILE] [--schemas DIR]... [--envelope]
//
// Exit 0 when the answer is valid, 1 when it is not, 2 on a usage error.
#include "command.hpp"
#include "schema_lookup.hpp"
#include "terminal_output.hpp"

#include <switchboard/protocol/output_parser.hpp>
#include <switchboard/protocol/schema_registry.hpp>

#include <boost/json/parse.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace sp = switchboard::protocol;
using namespace switchboard::cli;

constexpr std::string_view usage_text =
    "usage: switchboard validate --schema FILE_OR_NAME [--input FILE] [--schemas DIR]... "
    "[--envelope]\n"
    "\n"
    "Runs the structured-output parser (direct, extract, repair, validate) on a model's raw\n"
    "answer and prints {ok, stage, repairs, reason, errors, value} as JSON.\n"
    "\n"
    "  --schema FILE_OR_NAME  a schema file, or a registered name / name@version looked up in\n"
    "                         the schema directories\n"
    "  --input FILE           the raw answer (default: standard input; '-' also means stdin)\n"
    "  --schemas DIR          a schema directory (repeatable). Default: the directories in\n"
    "                         SWITCHBOARD_SCHEMA_PATH (':'-separated), else ./schemas\n"
    "  --envelope             validate an agent envelope {data, explanation, confidence,\n"
    "                         reasoning} whose data follows the schema\n"
    "\n"
    "exit status: 0 valid, 1 invalid, 2 usage error\n";

struct options {
  std::string schema;
  std::optional<std::string> input;
  std::vector<fs::path> schema_dirs;
  bool envelope = false;
};

options parse_options(std::span<const std::string> args) {
  options opts;
  auto value_of = [&](std::size_t& i) -> const std::string& {
    if (i + 1 >= args.size()) throw usage_error("option '" + args[i] + "' needs a value");
    return args[++i];
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--schema") {
      opts.schema = value_of(i);
    } else if (arg == "--input") {
      opts.input = value_of(i);
    } else if (arg == "--schemas") {
      opts.schema_dirs.emplace_back(value_of(i));
    } else if (arg == "--envelope") {
      opts.envelope = true;
    } else {
      throw usage_error("unknown option '" + arg + "'");
    }
  }
  if (opts.schema.empty()) throw usage_error("--schema is required");
  return opts;
}

std::string read_all(std::istream& in) {
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string read_file(const fs::path& file, std::string_view what) {
  std::ifstream in(file, std::ios::binary);
  if (!in || fs::is_directory(file)) {
    throw usage_error(std::string(what) + " '" + file.string() + "' cannot be read (missing?)");
  }
  return read_all(in);
}

int run_validate(std::span<const std::string> args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage_text;
    return exit_ok;
  }
  std::optional<sp::compiled_schema> schema;
  std::string raw;
  try {
    const options opts = parse_options(args);
    sp::schema_registry registry;
    schema = resolve_schema(opts.schema, opts.schema_dirs, registry);
    if (opts.envelope) {
      schema = sp::compiled_schema::compile(sp::compose_envelope_schema(schema->json()),
                                            "envelope(" + schema->id() + ")");
    }
    raw = (!opts.input || *opts.input == "-") ? read_all(std::cin)
                                              : read_file(*opts.input, "input file");
  } catch (const usage_error& e) {
    std::cerr << "switchboard validate: " << shown(e.what()) << "\n\n" << usage_text;
    return exit_usage;
  } catch (const sp::protocol_error& e) {
    std::cerr << "switchboard validate: " << shown(e.what()) << "\n";
    return exit_usage;
  }
  const sp::parse_result result = sp::parse_output(raw, *schema);
  print_json(std::cout, result.to_json());
  return result.ok() ? exit_ok : exit_failure;
}

const command_registration registration{
    "validate", "check a model's raw output against a schema", &run_validate};

}  // namespace
