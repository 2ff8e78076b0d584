#include <switchboard/telemetry/tracer.hpp>

#include <algorithm>
#include <utility>

namespace switchboard::telemetry {
namespace {

// Cuts a string value at max_bytes, never inside a UTF-8 sequence: the
// collector would reject the whole request over one broken character.
void cut_to_limit(std::string& value, std::size_t max_bytes) {
  if (value.size() <= max_bytes) return;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xc0) == 0x80) --cut;
  value.resize(cut);
}

void cut_value_to_limit(attribute_value& value, std::size_t max_bytes) {
  if (auto* text = std::get_if<std::string>(&value)) cut_to_limit(*text, max_bytes);
  if (auto* texts = std::get_if<std::vector<std::string>>(&value))
    for (auto& text : *texts) cut_to_limit(text, max_bytes);
}

// A sampled span being recorded: its data until end(), then the processor's.
class recording_span final : public span_recorder {
 public:
  recording_span(span_data data, std::shared_ptr<span_processor> processor, const span_limits& limits)
      : data_(std::move(data)), processor_(std::move(processor)), limits_(limits) {}

  const span_context& context() const noexcept override { return data_.context; }

  void set_attribute(attribute_key key, attribute_value value) override {
    cut_value_to_limit(value, limits_.max_value_bytes);
    const std::string_view name = key.view();
    auto same_key = std::find_if(data_.attributes.begin(), data_.attributes.end(),
                                 [name](const attribute& existing) { return existing.key.view() == name; });
    if (same_key != data_.attributes.end()) {
      same_key->value = std::move(value);
    } else if (data_.attributes.size() < limits_.max_attributes) {
      data_.attributes.push_back(attribute{std::move(key), std::move(value)});
    } else {
      ++data_.dropped_attributes;
    }
  }

  void add_event(std::string_view name, attributes event_attributes) override {
    if (data_.events.size() >= limits_.max_events) {
      ++data_.dropped_events;
      return;
    }
    data_.events.push_back(span_event{std::string(name), now_unix_nano(), std::move(event_attributes)});
  }

  void add_link(span_link link) override {
    if (data_.links.size() >= limits_.max_links) {
      ++data_.dropped_links;
      return;
    }
    data_.links.push_back(std::move(link));
  }

  void set_status(status_code code, std::string_view message) override {
    if (code == status_code::unset || data_.status == status_code::ok) return;
    data_.status = code;
    data_.status_message = code == status_code::error ? std::string(message) : std::string();
  }

  void end(std::uint64_t end_time_unix_nano) noexcept override {
    data_.end_time_unix_nano = std::max(end_time_unix_nano, data_.start_time_unix_nano);
    processor_->on_end(std::move(data_));
  }

 private:
  span_data data_;
  std::shared_ptr<span_processor> processor_;
  span_limits limits_;
};

}  // namespace

span& span::operator=(span&& other) noexcept {
  if (this != &other) {
    end();
    recorder_ = std::move(other.recorder_);
    context_ = std::move(other.context_);
  }
  return *this;
}

span& span::set_attribute(attribute_key key, std::string_view value) {
  if (recorder_) recorder_->set_attribute(std::move(key), std::string(value));
  return *this;
}

span& span::set_attribute(attribute_key key, bool value) {
  if (recorder_) recorder_->set_attribute(std::move(key), value);
  return *this;
}

span& span::set_attribute(attribute_key key, double value) {
  if (recorder_) recorder_->set_attribute(std::move(key), value);
  return *this;
}

span& span::set_attribute(attribute_key key, std::span<const std::string> values) {
  if (recorder_) recorder_->set_attribute(std::move(key), std::vector<std::string>(values.begin(), values.end()));
  return *this;
}

span& span::set_integer(attribute_key key, std::int64_t value) {
  if (recorder_) recorder_->set_attribute(std::move(key), value);
  return *this;
}

void span::add_event(std::string_view name, attributes event_attributes) {
  if (recorder_) recorder_->add_event(name, std::move(event_attributes));
}

void span::add_link(const span_context& linked, attributes link_attributes) {
  if (recorder_ && linked.valid()) recorder_->add_link(span_link{linked, std::move(link_attributes)});
}

void span::set_status(status_code code, std::string_view message) {
  if (recorder_) recorder_->set_status(code, message);
}

void span::end(std::uint64_t end_time_unix_nano) noexcept {
  if (!recorder_) return;
  // Released first: a recorder that throws or re-enters must not be ended twice.
  std::unique_ptr<span_recorder> ending = std::move(recorder_);
  context_ = ending->context();
  ending->end(end_time_unix_nano != 0 ? end_time_unix_nano : now_unix_nano());
}

span noop_tracer::start_span(std::string_view, const span_options& options) {
  if (options.parent != nullptr && options.parent->valid()) return span(*options.parent);
  return span();
}

recording_tracer::recording_tracer(telemetry::sampler sampler, std::shared_ptr<span_processor> processor,
                                   span_limits limits)
    : sampler_(sampler), processor_(std::move(processor)), limits_(limits) {}

span recording_tracer::start_span(std::string_view name, const span_options& options) {
  const span_context* parent = options.parent != nullptr && options.parent->valid() ? options.parent : nullptr;
  span_context context;
  if (parent != nullptr) {
    context.trace_id = parent->trace_id;
  } else if (options.trace_id != nullptr && options.trace_id->valid()) {
    context.trace_id = *options.trace_id;
  } else {
    context.trace_id = random_trace_id();
  }
  context.span_id = options.span_id != nullptr && options.span_id->valid() ? *options.span_id : random_span_id();
  if (parent != nullptr) context.trace_state = parent->trace_state;
  if (!sampler_.should_sample(context.trace_id, parent)) return span(std::move(context));
  context.trace_flags = sampled_flag;

  span_data data;
  data.context = std::move(context);
  if (parent != nullptr) {
    data.parent_span_id = parent->span_id;
    data.parent_is_remote = parent->is_remote;
  }
  data.name = std::string(name);
  // The attributes a span of the hub gets, without growing the vector on the way.
  data.attributes.reserve(std::min<std::size_t>(limits_.max_attributes, 12));
  data.kind = options.kind;
  data.start_time_unix_nano = options.start_time_unix_nano != 0 ? options.start_time_unix_nano : now_unix_nano();
  for (const span_link& link : options.links) {
    if (data.links.size() >= limits_.max_links) {
      ++data.dropped_links;
      continue;
    }
    if (link.context.valid()) data.links.push_back(link);
  }
  return span(std::make_unique<recording_span>(std::move(data), processor_, limits_));
}

}  // namespace switchboard::telemetry
