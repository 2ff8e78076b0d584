#include <switchboard/protocol/json_document.hpp>

#include <boost/json/serialize.hpp>

namespace switchboard::protocol {

json_document::json_document() {
  // One shared null for every default-constructed document.
  static const auto null = std::make_shared<const data>(data{nullptr, "null"});
  data_ = null;
}

json_document::json_document(boost::json::value value) {
  std::string text = boost::json::serialize(value);
  data_ = std::make_shared<const data>(data{std::move(value), std::move(text)});
}

}  // namespace switchboard::protocol
