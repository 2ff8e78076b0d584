// Loading the sample's data files with errors that name the file and the
// line (syntax) or the JSON Pointer (content) of what is wrong.
#include <switchboard/scheduling/household.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/stream_parser.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace switchboard::scheduling {
namespace {

namespace json = boost::json;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Reports content errors as "FILE: /members/2/calendar/0/start: message".
class reader {
 public:
  // `source`: the file, or what else the JSON came from (a tool's result).
  explicit reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw data_error(source_ + ": " + (pointer.empty() ? "/" : pointer) + ": " + message);
  }

  const json::object& object(const json::value& v, const std::string& ptr) const {
    if (!v.is_object()) fail(ptr, "expected an object");
    return v.get_object();
  }
  const json::array& array(const json::object& o, std::string_view key,
                           const std::string& ptr, bool required = true) const {
    static const json::array empty;
    const auto* v = o.if_contains(key);
    if (!v) {
      if (required) fail(ptr, "missing required field \"" + std::string(key) + "\"");
      return empty;
    }
    if (!v->is_array()) fail(ptr + "/" + std::string(key), "expected an array");
    return v->get_array();
  }
  std::string string(const json::object& o, std::string_view key, const std::string& ptr,
                     bool required = true) const {
    const auto* v = o.if_contains(key);
    if (!v) {
      if (required) fail(ptr, "missing required field \"" + std::string(key) + "\"");
      return {};
    }
    if (!v->is_string() || v->get_string().empty())
      fail(ptr + "/" + std::string(key), "expected a non-empty string");
    return std::string(v->get_string());
  }
  std::vector<std::string> strings(const json::object& o, std::string_view key,
                                   const std::string& ptr) const {
    std::vector<std::string> out;
    const auto& items = array(o, key, ptr, false);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        fail(ptr + "/" + std::string(key) + "/" + std::to_string(i), "expected a string");
      out.emplace_back(items[i].get_string());
    }
    return out;
  }
  std::optional<int> clock(const json::object& o, std::string_view key, const std::string& ptr,
                           bool required) const {
    const std::string text = string(o, key, ptr, required);
    if (text.empty()) return std::nullopt;
    const auto value = parse_clock(text);
    if (!value) fail(ptr + "/" + std::string(key), "expected a time \"HH:MM\", got \"" + text + "\"");
    return value;
  }
  minute_t datetime(const json::object& o, std::string_view key, const std::string& ptr) const {
    const std::string text = string(o, key, ptr);
    const auto value = parse_datetime(text);
    if (!value)
      fail(ptr + "/" + std::string(key),
           "expected a date and time \"YYYY-MM-DDTHH:MM\", got \"" + text + "\"");
    return *value;
  }
  unsigned weekdays(const json::object& o, std::string_view key, const std::string& ptr) const {
    unsigned mask = 0;
    const auto names = strings(o, key, ptr);
    for (std::size_t i = 0; i < names.size(); ++i) {
      const auto wd = parse_weekday(names[i]);
      if (!wd)
        fail(ptr + "/" + std::string(key) + "/" + std::to_string(i),
             "unknown weekday \"" + names[i] + "\" (use mon, tue, … or the full name)");
      mask |= 1u << *wd;
    }
    return mask;
  }

  calendar_entry entry(const json::value& v, const std::string& ptr) const {
    const auto& o = object(v, ptr);
    calendar_entry e;
    e.title = string(o, "title", ptr);
    e.by = string(o, "by", ptr, false);
    if (o.contains("every")) {
      e.weekdays = weekdays(o, "every", ptr);
      if (e.weekdays == 0) fail(ptr + "/every", "a recurring entry needs at least one weekday");
      e.from = *clock(o, "from", ptr, true);
      e.to = *clock(o, "to", ptr, true);
      if (e.to <= e.from) fail(ptr + "/to", "ends before it starts");
    } else {
      const minute_t start = datetime(o, "start", ptr);
      const minute_t end = datetime(o, "end", ptr);
      if (end <= start) fail(ptr + "/end", "ends before it starts");
      e.once = interval{start, end};
    }
    return e;
  }

  std::vector<calendar_entry> entries(const json::object& o, std::string_view key,
                                      const std::string& ptr) const {
    std::vector<calendar_entry> out;
    const auto& items = array(o, key, ptr, false);
    for (std::size_t i = 0; i < items.size(); ++i)
      out.push_back(entry(items[i], ptr + "/" + std::string(key) + "/" + std::to_string(i)));
    return out;
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// household.json's content: name, now, members with their calendars.
void read_members(household& h, const reader& r, const json::object& root) {
  h.name = r.string(root, "household", "", false);
  const std::string now = r.string(root, "now", "");
  const auto parsed_now = parse_datetime(now);
  if (!parsed_now) r.fail("/now", "expected a date and time \"YYYY-MM-DDTHH:MM\", got \"" + now + "\"");
  h.now = *parsed_now;
  const auto& members = r.array(root, "members", "");
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::string ptr = "/members/" + std::to_string(i);
    const auto& o = r.object(members[i], ptr);
    member m;
    m.name = r.string(o, "name", ptr);
    m.role = r.string(o, "role", ptr);
    m.aliases = r.strings(o, "aliases", ptr);
    if (const auto* in = o.if_contains("household")) {
      if (!in->is_bool()) r.fail(ptr + "/household", "expected true or false");
      m.in_household = in->get_bool();
    }
    m.drives = m.role == "parent";
    if (const auto* drives = o.if_contains("drives")) {
      if (!drives->is_bool()) r.fail(ptr + "/drives", "expected true or false");
      m.drives = drives->get_bool();
    }
    m.calendar = r.entries(o, "calendar", ptr);
    if (h.find_member(m.name)) r.fail(ptr + "/name", "duplicate member \"" + m.name + "\"");
    for (const auto& alias : m.aliases)
      if (h.find_member(alias)) r.fail(ptr + "/aliases", "alias \"" + alias + "\" names another member");
    h.members.push_back(std::move(m));
  }
}

// resources.json's content: resources with their bookings.
void read_resources(household& h, const reader& r, const json::object& root) {
  const auto& resources = r.array(root, "resources", "");
  for (std::size_t i = 0; i < resources.size(); ++i) {
    const std::string ptr = "/resources/" + std::to_string(i);
    const auto& o = r.object(resources[i], ptr);
    resource res;
    res.name = r.string(o, "name", ptr);
    res.kind = r.string(o, "kind", ptr);
    res.unit = r.string(o, "unit", ptr, false);
    const auto* capacity = o.if_contains("capacity");
    if (!capacity || !capacity->is_int64() || capacity->get_int64() < 1 || capacity->get_int64() > 100'000)
      r.fail(ptr + "/capacity", "expected an integer from 1 to 100000");
    res.capacity = static_cast<int>(capacity->get_int64());
    res.aliases = r.strings(o, "aliases", ptr);
    res.bookings = r.entries(o, "bookings", ptr);
    if (h.find_resource(res.name)) r.fail(ptr + "/name", "duplicate resource \"" + res.name + "\"");
    h.resources.push_back(std::move(res));
  }
}

// rules.json's content (hard and soft rules) at JSON Pointer `base`.
void read_rules(household& h, const reader& r, const json::object& root, const std::string& base) {
  const auto& hard = r.array(root, "hard", base, false);
  for (std::size_t i = 0; i < hard.size(); ++i) {
    const std::string ptr = base + "/hard/" + std::to_string(i);
    const auto& o = r.object(hard[i], ptr);
    hard_rule rule;
    rule.id = r.string(o, "id", ptr);
    rule.description = r.string(o, "description", ptr);
    rule.applies_to_role = r.string(o, "applies_to_role", ptr, false);
    rule.days = r.weekdays(o, "days", ptr);
    rule.not_before = r.clock(o, "not_before", ptr, false);
    rule.not_after = r.clock(o, "not_after", ptr, false);
    if (!rule.not_before && !rule.not_after)
      r.fail(ptr, "a hard rule needs \"not_before\" or \"not_after\"");
    h.hard_rules.push_back(std::move(rule));
  }
  const auto& soft = r.array(root, "soft", base, false);
  for (std::size_t i = 0; i < soft.size(); ++i) {
    const std::string ptr = base + "/soft/" + std::to_string(i);
    const auto& o = r.object(soft[i], ptr);
    soft_rule rule;
    rule.id = r.string(o, "id", ptr);
    rule.description = r.string(o, "description", ptr);
    rule.applies_to_role = r.string(o, "applies_to_role", ptr, false);
    rule.days = r.weekdays(o, "days", ptr);
    rule.prefer_from = r.clock(o, "prefer_from", ptr, false);
    rule.prefer_to = r.clock(o, "prefer_to", ptr, false);
    const auto* weight = o.if_contains("weight");
    if (!weight || !weight->is_number() || weight->to_number<double>() < 0 ||
        weight->to_number<double>() > 1)
      r.fail(ptr + "/weight", "expected a number between 0 and 1");
    rule.weight = weight->to_number<double>();
    h.soft_rules.push_back(std::move(rule));
  }
}

std::string names_with_aliases(const std::string& name, const std::vector<std::string>& aliases) {
  std::string out = name;
  if (!aliases.empty()) {
    out += " (";
    for (std::size_t i = 0; i < aliases.size(); ++i) out += (i ? ", " : "") + aliases[i];
    out += ')';
  }
  return out;
}

}  // namespace

boost::json::value parse_json_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw data_error(file.string() + ": cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();

  boost::json::stream_parser parser;
  boost::system::error_code ec;
  const std::size_t consumed = parser.write_some(text.data(), text.size(), ec);
  std::size_t offset = consumed;
  if (!ec) {
    if (consumed < text.size()) {
      ec = boost::json::make_error_code(boost::json::error::extra_data);
    } else {
      parser.finish(ec);
      offset = text.size();
    }
  }
  if (ec) {
    std::size_t line = 1;
    std::size_t column = 1;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw data_error(file.string() + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": malformed JSON: " + ec.message());
  }
  return parser.release();
}

household load_household(const std::filesystem::path& data_dir) {
  if (!std::filesystem::is_directory(data_dir))
    throw data_error(data_dir.string() + ": not a directory (expected the sample's data directory "
                                         "with household.json, resources.json and rules.json)");
  household h;
  auto read_file = [&](const char* name, auto read) {
    const auto file = data_dir / name;
    const reader r{file.string()};
    const json::value doc = parse_json_file(file);
    read(r, r.object(doc, ""));
  };
  read_file("household.json", [&](const reader& r, const json::object& root) { read_members(h, r, root); });
  read_file("resources.json", [&](const reader& r, const json::object& root) { read_resources(h, r, root); });
  read_file("rules.json", [&](const reader& r, const json::object& root) { read_rules(h, r, root, ""); });
  return h;
}

household household_from_json(const boost::json::value& doc, const std::string& source) {
  const reader r{source};
  const auto& root = r.object(doc, "");
  household h;
  read_members(h, r, root);
  read_resources(h, r, root);
  const auto* rules = root.if_contains("rules");
  if (!rules) r.fail("", "missing required field \"rules\"");
  read_rules(h, r, r.object(*rules, "/rules"), "/rules");
  return h;
}

const member* household::find_member(std::string_view name) const {
  for (const auto& m : members) {
    if (iequals(m.name, name)) return &m;
    for (const auto& alias : m.aliases)
      if (iequals(alias, name)) return &m;
  }
  return nullptr;
}

const resource* household::find_resource(std::string_view name) const {
  for (const auto& r : resources) {
    if (iequals(r.name, name)) return &r;
    for (const auto& alias : r.aliases)
      if (iequals(alias, name)) return &r;
  }
  return nullptr;
}

std::string household::member_names() const {
  std::string out;
  for (const auto& m : members) out += (out.empty() ? "" : ", ") + names_with_aliases(m.name, m.aliases);
  return out;
}

std::string household::resource_names() const {
  std::string out;
  for (const auto& r : resources) out += (out.empty() ? "" : ", ") + names_with_aliases(r.name, r.aliases);
  return out;
}

}  // namespace switchboard::scheduling
