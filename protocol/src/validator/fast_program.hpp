// The compiled form of a fast_schema: a flat vector of nodes, one per
// subschema, and the regular expressions they use. Shared by the compiler
// (fast_schema_compile.cpp) and the evaluator (fast_schema.cpp). Internal.
#pragma once

#include "date_format.hpp"
#include "ecma_regex.hpp"
#include "fast_schema.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace switchboard::protocol::detail {

namespace fast_path {

enum class verdict : std::uint8_t { pass, fail, unsure };

enum type_bit : std::uint8_t {
  t_null = 1,
  t_boolean = 2,
  t_object = 4,
  t_array = 8,
  t_number = 16,
  t_integer = 32,
  t_string = 64,
};

enum class extra_kind : std::uint8_t { any, none, schema };  // additionalItems/-Properties

struct bound {
  double value = 0;
  bool exclusive = false;
};

// Why a schema is not fast-path eligible (thrown by the compiler).
struct not_eligible {
  std::string why;
};

}  // namespace fast_path

struct fast_schema::program {
  using verdict = fast_path::verdict;
  using extra_kind = fast_path::extra_kind;

  struct node {
    bool always_false = false;
    int ref = -1;  // a $ref node: only the target counts (draft-07)
    std::uint8_t types = 0;  // 0: no "type"
    const boost::json::value* const_value = nullptr;
    const boost::json::array* enum_values = nullptr;
    bool format = false;  // an annotation that valijson still reads as a string
    date_format date = date_format::none;  // a format valijson checks

    std::vector<fast_path::bound> maxima, minima;
    bool multiple_int = false, multiple_double = false;
    std::int64_t multiple_of_int = 1;
    double multiple_of_double = 1;

    std::optional<std::uint64_t> min_length, max_length;
    std::vector<int> patterns;  // indices into regexes

    std::optional<std::uint64_t> min_items, max_items;
    bool unique_items = false;
    int items = -1;                 // single "items" schema
    bool tuple = false;             // "items" is an array
    std::vector<int> tuple_items;
    extra_kind additional_items = extra_kind::any;
    int additional_items_schema = -1;

    std::optional<std::uint64_t> min_properties, max_properties;
    std::vector<std::string> required;
    bool has_properties = false;  // properties/patternProperties/additionalProperties
    std::vector<std::pair<std::string, int>> properties;
    std::vector<std::pair<int, int>> pattern_properties;  // regex index, schema
    extra_kind additional_properties = extra_kind::any;
    int additional_properties_schema = -1;

    std::vector<int> all_of, any_of, one_of;
    int not_ = -1;
  };

  std::vector<node> nodes;
  std::vector<std::shared_ptr<const ecma_regex>> regexes;
  // The document the nodes point into (const/enum values); owned by the caller's copy.
  boost::json::value document;

  verdict eval(int index, const boost::json::value& v, int depth) const noexcept;
  // The same verdict for an object that is not inside a json::value (an
  // envelope's data), so that it need not be copied into one.
  verdict eval(int index, const boost::json::object& o, int depth) const noexcept;

 private:
  verdict eval_number(const node& n, const boost::json::value& v) const noexcept;
  verdict eval_string(const node& n, const boost::json::value& v) const noexcept;
  verdict eval_array(const node& n, const boost::json::array& a, int depth) const noexcept;
  verdict eval_object(const node& n, const boost::json::object& o, int depth) const noexcept;
  template <class Subject>  // a json::value, or an object at the root
  verdict eval_combinators(const node& n, const Subject& subject, int depth) const noexcept;
};

namespace fast_path {

// Compiles `schema` (copied into the program) into nodes; node 0 is the
// root. Throws not_eligible.
std::unique_ptr<fast_schema::program> compile_program(const boost::json::value& schema);

}  // namespace fast_path

}  // namespace switchboard::protocol::detail
