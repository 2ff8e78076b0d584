// The agent envelope: conversions and validation.
#include <switchboard/protocol/envelope.hpp>

#include "detail/json_pointer.hpp"

#include <boost/json/serialize.hpp>

#include <cmath>

namespace switchboard::protocol {

namespace json = boost::json;

envelope make_error_envelope(error_record error, std::string explanation) {
  envelope out;
  out.confidence = 0.0;
  out.reasoning = error.type + ": " + error.message;
  out.explanation = std::move(explanation);
  out.error = std::move(error);
  return out;
}

namespace {

void check_text_field(const json::object& obj, std::string_view name,
                      std::vector<validation_error>& errors) {
  const std::string path = detail::append_pointer("", name);
  const auto* field = obj.if_contains(name);
  if (!field) {
    errors.push_back({path, "required property missing", errc::schema_missing_field});
  } else if (!field->is_string()) {
    errors.push_back({path, "expected string, got " + std::string(detail::json_type_name(*field)),
                      errc::schema_type_error});
  } else if (field->get_string().empty()) {
    errors.push_back({path, "must be a non-empty string", errc::schema_violation});
  }
}

void check_confidence(const json::object& obj, std::vector<validation_error>& errors) {
  const auto* field = obj.if_contains("confidence");
  if (!field) {
    errors.push_back({"/confidence", "required property missing", errc::schema_missing_field});
    return;
  }
  if (!field->is_number()) {
    errors.push_back({"/confidence",
                      "expected number, got " + std::string(detail::json_type_name(*field)),
                      errc::schema_type_error});
    return;
  }
  const double value = field->to_number<double>();
  if (!std::isfinite(value) || value < 0.0 || value > 1.0) {
    errors.push_back({"/confidence",
                      "must be a finite number in [0, 1], got " + detail::readable_json(*field),
                      errc::schema_violation});
  }
}

void check_data(const json::object& obj, const compiled_schema& data_schema,
                std::vector<validation_error>& errors) {
  const auto* data = obj.if_contains("data");
  if (!data) {
    errors.push_back({"/data", "required property missing", errc::schema_missing_field});
    return;
  }
  if (!data->is_object()) {
    errors.push_back({"/data", "expected object, got " + std::string(detail::json_type_name(*data)),
                      errc::schema_type_error});
    return;
  }
  for (auto& e : data_schema.validate(*data)) {
    e.path = "/data" + e.path;
    errors.push_back(std::move(e));
  }
}

void check_error_record(const json::object& obj, std::vector<validation_error>& errors) {
  const auto* field = obj.if_contains("error");
  if (!field || field->is_null()) return;
  if (!json::try_value_to<error_record>(*field)) {
    errors.push_back({"/error", "expected an error record {type, message, retryable, agent}",
                      errc::schema_type_error});
  }
}

void check_unknown_fields(const json::object& obj, std::vector<validation_error>& errors) {
  for (const auto& [key, value] : obj) {
    if (key != "data" && key != "explanation" && key != "confidence" && key != "reasoning" &&
        key != "error") {
      errors.push_back({detail::append_pointer("", key),
                        "property not allowed in an envelope (allowed: data, explanation, "
                        "confidence, reasoning, error)",
                        errc::schema_violation});
    }
  }
}

void check_text_value(std::string_view text, const char* path,
                      std::vector<validation_error>& errors) {
  if (text.empty()) errors.push_back({path, "must be a non-empty string", errc::schema_violation});
}

const json::string* string_field(const json::object& obj, std::string_view key) {
  const auto* v = obj.if_contains(key);
  return v ? v->if_string() : nullptr;
}

}  // namespace

std::vector<validation_error> validate_envelope(const json::value& envelope_json,
                                                const compiled_schema& data_schema) {
  std::vector<validation_error> errors;
  const auto* obj = envelope_json.if_object();
  if (!obj) {
    errors.push_back({"", "expected an envelope object, got " +
                              std::string(detail::json_type_name(envelope_json)),
                      errc::schema_type_error});
    return errors;
  }
  check_data(*obj, data_schema, errors);
  check_text_field(*obj, "explanation", errors);
  check_confidence(*obj, errors);
  check_text_field(*obj, "reasoning", errors);
  check_error_record(*obj, errors);
  check_unknown_fields(*obj, errors);
  return errors;
}

// The struct's own fields are well-typed by construction; only their values
// can be wrong. Errors, their order and their wording are those of the JSON
// overload applied to json::value_from(value), without building that value.
std::vector<validation_error> validate_envelope(const envelope& value,
                                                const compiled_schema& data_schema) {
  std::vector<validation_error> errors;
  const bool finite = std::isfinite(value.confidence);
  if (!finite) {
    // JSON cannot carry NaN or infinity; this comes first.
    errors.push_back({"/confidence",
                      "must be a finite number in [0, 1], got " + std::to_string(value.confidence),
                      errc::schema_violation});
  }
  for (auto& e : data_schema.validate(value.data)) {
    e.path = "/data" + e.path;
    errors.push_back(std::move(e));
  }
  check_text_value(value.explanation, "/explanation", errors);
  if (finite && (value.confidence < 0.0 || value.confidence > 1.0)) {
    errors.push_back({"/confidence",
                      "must be a finite number in [0, 1], got " +
                          detail::readable_json(json::value(value.confidence)),
                      errc::schema_violation});
  }
  check_text_value(value.reasoning, "/reasoning", errors);
  // An error_record always converts to a valid record; there are no unknown fields.
  return errors;
}

void tag_invoke(json::value_from_tag, json::value& out, const error_record& in) {
  out = json::object{{"type", in.type},
                     {"message", in.message},
                     {"retryable", in.retryable},
                     {"agent", in.agent}};
}

boost::system::result<error_record> tag_invoke(json::try_value_to_tag<error_record>,
                                               const json::value& in) {
  const auto* obj = in.if_object();
  if (!obj) return errc::invalid_envelope;
  const auto* type = string_field(*obj, "type");
  const auto* message = string_field(*obj, "message");
  if (!type || !message) return errc::invalid_envelope;
  error_record out{std::string(*type), std::string(*message), false, {}};
  if (const auto* retryable = obj->if_contains("retryable")) {
    if (!retryable->is_bool()) return errc::invalid_envelope;
    out.retryable = retryable->get_bool();
  }
  if (const auto* agent = obj->if_contains("agent")) {
    if (!agent->is_string()) return errc::invalid_envelope;
    out.agent = std::string(agent->get_string());
  }
  return out;
}

void tag_invoke(json::value_from_tag, json::value& out, const envelope& in) {
  json::object obj{{"data", in.data},
                   {"explanation", in.explanation},
                   {"confidence", in.confidence},
                   {"reasoning", in.reasoning}};
  if (in.error) obj["error"] = json::value_from(*in.error);
  out = std::move(obj);
}

boost::system::result<envelope> tag_invoke(json::try_value_to_tag<envelope>,
                                           const json::value& in) {
  const auto* obj = in.if_object();
  if (!obj) return errc::invalid_envelope;
  const auto* data = obj->if_contains("data");
  const auto* explanation = string_field(*obj, "explanation");
  const auto* reasoning = string_field(*obj, "reasoning");
  const auto* confidence = obj->if_contains("confidence");
  if (!data || !data->is_object() || !explanation || !reasoning || !confidence ||
      !confidence->is_number()) {
    return errc::invalid_envelope;
  }
  envelope out;
  out.data = data->get_object();
  out.explanation = std::string(*explanation);
  out.reasoning = std::string(*reasoning);
  out.confidence = confidence->to_number<double>();
  if (!std::isfinite(out.confidence) || out.confidence < 0.0 || out.confidence > 1.0) {
    return errc::invalid_envelope;
  }
  if (const auto* error = obj->if_contains("error"); error && !error->is_null()) {
    auto record = json::try_value_to<error_record>(*error);
    if (!record) return record.error();
    out.error = std::move(*record);
  }
  return out;
}

boost::system::result<envelope> take_envelope(json::value&& in) {
  // Converts with `data` emptied (so nothing big is copied), then moves it in.
  json::object data;
  if (auto* obj = in.if_object()) {
    if (auto* d = obj->if_contains("data"); d && d->is_object()) data = std::move(d->get_object());
  }
  auto out = json::try_value_to<envelope>(in);
  if (out) out->data = std::move(data);
  return out;
}

}  // namespace switchboard::protocol
