#include "schema_documents.hpp"

#include <switchboard/protocol/limits.hpp>

namespace switchboard::protocol::detail {

namespace json = boost::json;

schema_documents::schema_documents(const json::value& main, fetcher fetch)
    : main_(main), fetch_(std::move(fetch)) {}

const json::value* schema_documents::find(const std::string& uri) {
  if (const auto known = remote_.find(uri); known != remote_.end()) return known->second.get();
  std::unique_ptr<const json::value> document;
  if (fetch_) {
    if (auto fetched = fetch_(uri)) {
      check_schema_limits(*fetched, "the document '" + uri + "'");
      document = std::make_unique<const json::value>(std::move(*fetched));
    }
  }
  return remote_.emplace(uri, std::move(document)).first->second.get();
}

void check_schema_limits(const json::value& document, const std::string& where) {
  if (auto problem = check_untrusted_value(document, max_schema_depth)) {
    throw schema_refusal(where + " cannot be used: " + *problem);
  }
}

std::string schema_location(const std::string& uri, const std::string& pointer) {
  return uri + "#" + pointer;
}

}  // namespace switchboard::protocol::detail
