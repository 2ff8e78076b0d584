// An immutable JSON value together with its serialized text, both computed
// once and shared by every copy. Schemas travel with every model request;
// a json_document lets them be sent without being copied or serialized
// again.
//
// Immutable, so safe to read from many threads; copies are cheap (one
// reference count).
#pragma once

#include <boost/json/value.hpp>

#include <memory>
#include <string>

namespace switchboard::protocol {

class json_document {
 public:
  // The JSON null.
  json_document();
  // Implicit, so a plain value can be passed wherever a document is expected.
  json_document(boost::json::value value);

  const boost::json::value& json() const noexcept { return data_->json; }
  // The compact serialization of json(), as boost::json::serialize writes it.
  const std::string& text() const noexcept { return data_->text; }

  friend bool operator==(const json_document& a, const json_document& b) noexcept {
    return a.data_ == b.data_ || a.data_->json == b.data_->json;
  }

 private:
  struct data {
    boost::json::value json;
    std::string text;
  };
  std::shared_ptr<const data> data_;
};

}  // namespace switchboard::protocol
