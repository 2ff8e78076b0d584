// Schemas addressed by name and version: "scheduling.output@1".
//
// Lookup by name gives the newest version, lookup by name@version that one.
// Files are named <name>@<version>.json (a file's "$id" of the same form
// wins over the file name). Duplicates and unparsable schemas are refused
// with the file name in the error.
//
// The registry also composes the full envelope schema around an agent's data
// schema, so a model receives one complete schema.
//
// Thread-safety: all member functions may be called concurrently; lookups
// take a shared lock, registration an exclusive one. Returned
// compiled_schema handles stay valid after the registry is gone.
#pragma once

#include <switchboard/protocol/validation.hpp>

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::protocol {

struct schema_id {
  std::string name;
  int version = 0;  // 0 in a lookup means "newest"

  // "name" or "name@3"; errc::invalid_schema_id otherwise.
  static boost::system::result<schema_id> parse(std::string_view text);
  std::string to_string() const;  // "name@3"
  friend bool operator==(const schema_id&, const schema_id&) = default;
};

class schema_registry {
 public:
  schema_registry();
  ~schema_registry();
  schema_registry(const schema_registry&) = delete;
  schema_registry& operator=(const schema_registry&) = delete;

  // Registers a schema from code. `source` names where it came from in
  // errors ("<code>", a file path). Throws protocol_error: duplicate_schema,
  // unparsable_schema, invalid_schema_id.
  compiled_schema add(const schema_id& id, const boost::json::value& schema,
                      std::string source = "<code>");

  // Loads one <name>@<version>.json file; throws protocol_error naming the file.
  compiled_schema load_file(const std::filesystem::path& file);
  // Loads every *.json file below `dir`; returns how many were loaded.
  std::size_t load_directory(const std::filesystem::path& dir);

  // "name" → newest version, "name@2" → exactly that version.
  std::optional<compiled_schema> find(std::string_view name_or_id) const;
  // As find, but throws protocol_error(unknown_schema) naming what was asked
  // and the versions that exist.
  compiled_schema at(std::string_view name_or_id) const;

  // Attaches an invariant to a registered schema; later lookups include it.
  void add_invariant(std::string_view name_or_id, std::string invariant_name,
                     invariant_check check);

  // The envelope schema {data: <data schema>, explanation, confidence,
  // reasoning} composed around a registered data schema, compiled, with id
  // "envelope(<data id>)". Cached per data schema.
  compiled_schema envelope_schema(std::string_view data_schema_id) const;

  std::vector<schema_id> list() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// The composed envelope schema as plain JSON (what envelope_schema compiles).
boost::json::value compose_envelope_schema(const boost::json::value& data_schema);

}  // namespace switchboard::protocol
