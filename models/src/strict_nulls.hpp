// Strict mode's nulls (strict_nulls.cpp).
#pragma once

#include <boost/json/value.hpp>

namespace switchboard::models::detail {

// Removes null members at optional properties of `value`, following
// properties, items and local $refs of the original schema (`schema_node`
// within `root`). Returns whether anything changed.
bool drop_optional_nulls(boost::json::value& value, const boost::json::value& schema_node,
                         const boost::json::value& root);

}  // namespace switchboard::models::detail
