// The documents one schema is made of: the main document and the remote
// ones its $refs name, each fetched through the resolver at most once, and
// the limits every schema document is held to. Internal to compiled_schema.
//
// Not thread-safe: used on the compiling thread only.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace switchboard::protocol::detail {

// Limits of a schema (documented in docs/structured-outputs.md). Each keeps
// valijson's recursive parser and validator, and ours, far from the stack's
// end, whatever a schema file says.
inline constexpr std::size_t max_schema_depth = 128;        // nesting of the JSON
inline constexpr std::size_t max_same_value_chain = 128;    // $ref/allOf/... applied to one value
inline constexpr std::size_t max_ref_pointer_tokens = 128;  // "/a/b/..." tokens of one $ref
inline constexpr std::size_t max_ref_uri_length = 512;      // the URI part of a $ref, an "id"
inline constexpr std::size_t max_schema_patterns = 512;     // distinct regular expressions

// Why a schema cannot be used, without the schema's id (the caller adds it):
// "$ref cycle: #/definitions/a -> #/definitions/b -> #/definitions/a".
class schema_refusal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class schema_documents {
 public:
  using fetcher = std::function<std::optional<boost::json::value>(const std::string& uri)>;

  // `main` must outlive this object; `fetch` may be empty (no remote refs).
  schema_documents(const boost::json::value& main, fetcher fetch);

  const boost::json::value& main() const noexcept { return main_; }

  // The document at `uri`, fetched on first use and kept; nullptr when the
  // resolver does not know it. Throws schema_refusal when it nests deeper
  // than max_schema_depth or holds a number that is not finite.
  const boost::json::value* find(const std::string& uri);

 private:
  const boost::json::value& main_;
  fetcher fetch_;
  std::map<std::string, std::unique_ptr<const boost::json::value>> remote_;  // null: unknown
};

// Throws schema_refusal when `document` (named `where`) nests deeper than
// max_schema_depth or holds a non-finite number.
void check_schema_limits(const boost::json::value& document, const std::string& where);

// "#/a/b" for the main document (uri ""), "http://x/y.json#/a/b" otherwise.
std::string schema_location(const std::string& uri, const std::string& pointer);

}  // namespace switchboard::protocol::detail
