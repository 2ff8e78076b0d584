// A schema document rewritten so that valijson never applies a std::regex
// to a value: the keywords it would run through std::regex are renamed to
// keywords of ours, which reference_schema gives valijson as custom
// constraints running RE2 and hand-written parsers. Internal.
//
//   "pattern": P            -> "$switchboard:pattern": <index of P>
//   "format": "date"|"time"|"date-time"
//                           -> "$switchboard:format": <date_format>
//   an object schema with "patternProperties"
//                           -> "$switchboard:group": <index>; the subschemas
//                              of patternProperties and additionalProperties
//                              move to the root's "$switchboard:moved" list
//                              (a $ref can always reach them there: valijson
//                              cannot follow a pointer through a property
//                              named ""); "properties" stays for valijson,
//                              and the group constraint applies the patterns
//                              and additionalProperties as valijson's
//                              PropertiesConstraint would. (schema_graph.hpp
//                              refuses a $ref into what moves.)
//
// Every object in a schema position is rewritten, including under
// definitions and unknown keywords ($ref may point anywhere); values of
// enum, const, default and examples are data and stay as they are. A key of
// the schema that already starts with "$switchboard:" is refused.
//
// Not thread-safe: used on the compiling thread only.
#pragma once

#include "date_format.hpp"
#include "ecma_regex.hpp"

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::protocol::detail {

inline constexpr std::string_view pattern_keyword = "$switchboard:pattern";
inline constexpr std::string_view format_keyword = "$switchboard:format";
inline constexpr std::string_view group_keyword = "$switchboard:group";
inline constexpr std::string_view moved_keyword = "$switchboard:moved";

// One regular expression of the schema and where it was found.
struct schema_pattern {
  std::string text;      // as valijson reads it (up to the first NUL)
  std::string location;  // "#/properties/code/pattern"
  std::shared_ptr<const ecma_regex> regex;  // null when it cannot be used
  std::string why_not;
};

// An object schema with patternProperties (see above).
struct property_group {
  enum class extra : std::uint8_t { any, none, schema };
  struct pattern_child {
    std::size_t pattern;  // into keyword_table::patterns
    std::string ref;      // "$ref" text that reaches its subschema ("#/$switchboard:moved/3")
  };

  std::string location;
  std::set<std::string> property_names;  // of "properties", up to a NUL as valijson keeps them
  std::vector<pattern_child> patterns;   // ordered by pattern text, as valijson applies them
  extra additional = extra::any;
  std::string additional_ref;  // when additional == extra::schema
  std::string invalid;         // why valijson would refuse it, when it would
};

// What the rewritten documents refer to by index. Grows as documents are
// rewritten (remote ones while valijson loads them).
struct keyword_table {
  std::vector<schema_pattern> patterns;
  std::vector<property_group> groups;
  std::map<std::string, std::size_t> pattern_by_text;  // first entry of each distinct text
  bool uses_id = false;  // an "id" keyword changes valijson's resolution scope

  // Throws schema_refusal past max_schema_patterns distinct texts.
  std::size_t add_pattern(std::string_view text, std::string location);
};

// A copy of `document` (fetched from `uri`, "" for the main document) ready
// for valijson. Throws schema_refusal on a reserved key.
boost::json::value prepare_for_valijson(const boost::json::value& document, const std::string& uri,
                                        keyword_table& table);

}  // namespace switchboard::protocol::detail
