// prompt_file: strict loading of prompt files. Every member is checked when
// the file is loaded so that a typo fails at start-up, not in the middle of a
// workflow.
#include <switchboard/agents/prompt_file.hpp>

#include <switchboard/protocol/limits.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/tool_call.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/stream_parser.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace switchboard::agents {

namespace json = boost::json;

namespace {

// Parsing context: the file's text (for line numbers) and its name.
struct source_text {
  std::string name;
  std::string_view text;

  int line_at(std::size_t offset) const {
    offset = std::min(offset, text.size());
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
  }

  [[noreturn]] void fail(const std::string& what, int line = 0) const {
    std::string where = name;
    if (line > 0) where += ":" + std::to_string(line);
    throw agent_error(agent_errc::prompt_file_invalid, where + ": " + what);
  }

  // The offset just after `"key":` at or after `from`, or npos.
  std::size_t find_key(std::string_view key, std::size_t from = 0) const {
    const std::string quoted = json::serialize(json::value(key));
    for (auto pos = text.find(quoted, from); pos != std::string_view::npos;
         pos = text.find(quoted, pos + 1)) {
      auto after = pos + quoted.size();
      while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
      if (after < text.size() && text[after] == ':') return after + 1;
    }
    return std::string_view::npos;
  }

  // File lines of consecutive string values, searched from `from`; 0 where
  // the string is not found verbatim (escapes written differently).
  std::vector<int> lines_of(const std::vector<std::string>& values, std::size_t from) const {
    std::vector<int> lines;
    std::size_t cursor = from;
    for (const auto& v : values) {
      const std::string quoted = json::serialize(json::value(v));
      const auto pos = cursor == std::string_view::npos ? cursor : text.find(quoted, cursor);
      if (pos == std::string_view::npos) {
        lines.push_back(0);
        continue;
      }
      lines.push_back(line_at(pos));
      cursor = pos + quoted.size();
    }
    return lines;
  }
};

json::value parse_json(const source_text& src) {
  json::stream_parser parser({}, protocol::untrusted_parse_options());
  boost::system::error_code ec;
  const std::size_t consumed = parser.write_some(src.text.data(), src.text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) src.fail("not valid JSON (" + ec.message() + ")", src.line_at(consumed));
  return parser.release();
}

std::string_view kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
  }
  return "value";
}

// Reads typed members of one JSON object, naming the member path in errors.
class member_reader {
 public:
  member_reader(const source_text& src, const json::object& obj, std::string path,
                std::size_t offset_hint = 0)
      : src_(src), obj_(obj), path_(std::move(path)), offset_(offset_hint) {}

  void allow_only(std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, value] : obj_) {
      if (std::find(keys.begin(), keys.end(), std::string_view(key)) == keys.end()) {
        std::string allowed;
        for (auto k : keys) allowed += (allowed.empty() ? "" : ", ") + std::string(k);
        src_.fail("unknown member \"" + member(key) + "\" (allowed: " + allowed + ")",
                  line_of(key));
      }
    }
  }

  const json::value* get(std::string_view key) const { return obj_.if_contains(key); }

  std::string string(std::string_view key, bool required) const {
    const auto* v = get(key);
    if (!v) {
      if (required) src_.fail("missing required member \"" + member(key) + "\"");
      return {};
    }
    if (!v->is_string() || (required && v->get_string().empty())) {
      src_.fail("\"" + member(key) + "\" must be a non-empty string, got " +
                    std::string(kind_name(*v)),
                line_of(key));
    }
    return std::string(v->get_string());
  }

  std::optional<double> number(std::string_view key) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) {
      src_.fail("\"" + member(key) + "\" must be a number, got " + std::string(kind_name(*v)),
                line_of(key));
    }
    return v->to_number<double>();
  }

  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min) const {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    boost::system::error_code ec;
    const auto n = v->is_number() ? v->to_number<std::int64_t>(ec) : 0;
    if (!v->is_number() || ec || n < min) {
      src_.fail("\"" + member(key) + "\" must be an integer >= " + std::to_string(min) + ", got " +
                    json::serialize(*v),
                line_of(key));
    }
    return n;
  }

  // A string or an array of strings (template lines); empty when absent.
  std::vector<std::string> lines(std::string_view key, bool required) const {
    const auto* v = get(key);
    if (!v) {
      if (required) src_.fail("missing required member \"" + member(key) + "\"");
      return {};
    }
    std::vector<std::string> out;
    if (v->is_string()) {
      out.emplace_back(v->get_string());
    } else if (v->is_array()) {
      for (const auto& item : v->get_array()) {
        if (!item.is_string()) {
          src_.fail("\"" + member(key) + "\" must hold strings only, found " +
                        std::string(kind_name(item)),
                    line_of(key));
        }
        out.emplace_back(item.get_string());
      }
    } else {
      src_.fail("\"" + member(key) + "\" must be a string or an array of strings, got " +
                    std::string(kind_name(*v)),
                line_of(key));
    }
    return out;
  }

  std::string member(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  std::size_t key_offset(std::string_view key) const { return src_.find_key(key, offset_); }
  int line_of(std::string_view key) const {
    const auto pos = key_offset(key);
    return pos == std::string_view::npos ? 0 : src_.line_at(pos);
  }

 private:
  const source_text& src_;
  const json::object& obj_;
  std::string path_;
  std::size_t offset_;
};

prompt_template read_template(const source_text& src, const member_reader& r, std::string_view key,
                              bool required, template_kind kind, const std::string& field) {
  auto lines = r.lines(key, required);
  template_origin origin;
  origin.file = src.name;
  origin.field = field;
  const auto at = r.key_offset(key);
  if (at != std::string_view::npos) origin.file_lines = src.lines_of(lines, at);
  return prompt_template::parse(lines, std::move(origin), kind);
}

std::optional<output_mode> read_mode(const source_text& src, const member_reader& r) {
  const std::string mode = r.string("output_mode", false);
  if (mode.empty() || mode == "auto") return std::nullopt;
  for (auto m : {output_mode::json_schema, output_mode::json_object, output_mode::prompt_schema}) {
    if (to_string(m) == mode) return m;
  }
  src.fail("\"model.output_mode\" must be auto, json_schema, json_object or prompt_schema, got \"" +
               mode + "\"",
           r.line_of("output_mode"));
}

prompt_model_settings read_model(const source_text& src, const json::value* v,
                                 std::size_t offset) {
  prompt_model_settings settings;
  if (!v) return settings;
  if (!v->is_object()) src.fail("\"model\" must be an object, got " + std::string(kind_name(*v)));
  const member_reader r(src, v->get_object(), "model", offset);
  r.allow_only({"role", "model", "temperature", "max_tokens", "output_mode", "max_attempts",
                "token_budget"});
  if (auto role = r.string("role", false); !role.empty()) settings.role = std::move(role);
  settings.model = r.string("model", false);
  settings.temperature = r.number("temperature");
  if (settings.temperature && (*settings.temperature < 0 || *settings.temperature > 2)) {
    src.fail("\"model.temperature\" must be in [0, 2]", r.line_of("temperature"));
  }
  if (auto n = r.integer("max_tokens", 1)) settings.max_tokens = static_cast<int>(*n);
  settings.mode = read_mode(src, r);
  if (auto n = r.integer("max_attempts", 1)) settings.max_attempts = static_cast<int>(*n);
  if (auto n = r.integer("token_budget", 0)) settings.token_budget = *n;
  return settings;
}

std::vector<prompt_policy> read_policies(const source_text& src, const json::value* v,
                                         std::size_t offset) {
  std::vector<prompt_policy> out;
  if (!v) return out;
  if (!v->is_array()) src.fail("\"policies\" must be an array, got " + std::string(kind_name(*v)));
  std::set<std::string> names;
  std::size_t search_from = offset;
  for (std::size_t i = 0; i < v->get_array().size(); ++i) {
    const auto& item = v->get_array()[i];
    const std::string path = "policies[" + std::to_string(i) + "]";
    if (!item.is_object()) src.fail("\"" + path + "\" must be an object");
    // Anchor line lookups at this policy's "name" member.
    std::size_t anchor = search_from;
    if (const auto name_at = src.find_key("name", search_from); name_at != std::string_view::npos) {
      anchor = name_at;
      search_from = name_at + 1;
    }
    const member_reader r(src, item.get_object(), path, anchor);
    r.allow_only({"name", "triggers", "match_on", "instructions"});
    prompt_policy p;
    p.name = r.string("name", true);
    if (!names.insert(p.name).second) {
      src.fail("policy \"" + p.name + "\" is declared twice", r.line_of("name"));
    }
    p.triggers = r.lines("triggers", true);
    if (p.triggers.empty()) src.fail("\"" + path + ".triggers\" is empty", r.line_of("triggers"));
    for (const auto& t : p.triggers) {
      if (t.find_first_not_of(" \t") == std::string::npos) {
        src.fail("\"" + path + ".triggers\" holds an empty trigger", r.line_of("triggers"));
      }
    }
    if (r.get("match_on")) {
      p.match_on = r.lines("match_on", true);
      for (const auto& m : p.match_on) {
        const bool ok = m == "input" || m.starts_with("input/") ||
                        m == "additional_instructions" || m == "clarification_answers";
        if (!ok) {
          src.fail("\"" + path + ".match_on\" entry \"" + m +
                       "\" is not input, input/<pointer>, additional_instructions or "
                       "clarification_answers",
                   r.line_of("match_on"));
        }
      }
    }
    p.instructions = read_template(src, r, "instructions", true, template_kind::prompt,
                                   path + ".instructions");
    if (p.instructions.uses("policies")) {
      src.fail("\"" + path + ".instructions\" cannot use {{policies}}", r.line_of("instructions"));
    }
    out.push_back(std::move(p));
  }
  return out;
}

confidence_rule read_rule(const source_text& src, const json::value& item, const std::string& path,
                          std::size_t offset) {
  if (!item.is_object()) src.fail("\"" + path + "\" must be an object");
  const member_reader r(src, item.get_object(), path, offset);
  r.allow_only({"if_present", "if_absent", "if_equals", "value", "add"});
  confidence_rule rule;
  int conditions = 0;
  if (r.get("if_present")) {
    rule.when = confidence_rule::condition::present;
    rule.pointer = r.string("if_present", true);
    ++conditions;
  }
  if (r.get("if_absent")) {
    rule.when = confidence_rule::condition::absent;
    rule.pointer = r.string("if_absent", true);
    ++conditions;
  }
  if (r.get("if_equals")) {
    rule.when = confidence_rule::condition::equals;
    rule.pointer = r.string("if_equals", true);
    if (!r.get("value")) src.fail("\"" + path + "\" with if_equals needs \"value\"");
    rule.value = *r.get("value");
    ++conditions;
  } else if (r.get("value")) {
    src.fail("\"" + path + ".value\" is only meaningful with if_equals", r.line_of("value"));
  }
  if (conditions != 1) {
    src.fail("\"" + path + "\" needs exactly one of if_present, if_absent, if_equals");
  }
  if (!rule.pointer.starts_with("/")) {
    src.fail("\"" + path + "\" pointer \"" + rule.pointer +
             "\" must be a JSON Pointer into the envelope, e.g. /data/start_time");
  }
  const auto add = r.number("add");
  if (!add) src.fail("missing required member \"" + path + ".add\"");
  rule.add = *add;
  return rule;
}

confidence_rules read_confidence(const source_text& src, const json::value* v, std::size_t offset) {
  confidence_rules out;
  if (!v) return out;
  if (!v->is_object()) {
    src.fail("\"confidence_rules\" must be an object, got " + std::string(kind_name(*v)));
  }
  const member_reader r(src, v->get_object(), "confidence_rules", offset);
  r.allow_only({"base", "rules", "min", "max"});
  out.base = r.number("base");
  out.min = r.number("min").value_or(0.0);
  out.max = r.number("max").value_or(1.0);
  if (out.min < 0 || out.max > 1 || out.min > out.max) {
    src.fail("\"confidence_rules\" needs 0 <= min <= max <= 1");
  }
  if (out.base && (*out.base < 0 || *out.base > 1)) {
    src.fail("\"confidence_rules.base\" must be in [0, 1]", r.line_of("base"));
  }
  if (const auto* rules = r.get("rules")) {
    if (!rules->is_array()) src.fail("\"confidence_rules.rules\" must be an array");
    for (std::size_t i = 0; i < rules->get_array().size(); ++i) {
      out.rules.push_back(read_rule(src, rules->get_array()[i],
                                    "confidence_rules.rules[" + std::to_string(i) + "]", offset));
    }
  }
  return out;
}

void check_schema_id(const source_text& src, const member_reader& r, std::string_view key,
                     const std::string& value) {
  const auto at = value.find('@');
  bool ok = at != std::string::npos && at > 0 && at + 1 < value.size();
  if (ok) {
    ok = std::all_of(value.begin() + static_cast<std::ptrdiff_t>(at) + 1, value.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
  }
  if (!ok) {
    src.fail("\"" + std::string(key) + "\" must be name@version, e.g. nl_parser.output@1, got \"" +
                 value + "\"",
             r.line_of(key));
  }
}

// Names of the tools the agent may call: "calendar.lookup",
// "mcp:files/read_file". Whether they exist is checked where the tool
// registry is known (register_prompt_agents), not here.
std::vector<std::string> read_tools(const source_text& src, const member_reader& r) {
  if (!r.get("tools")) return {};
  if (!r.get("tools")->is_array()) {
    src.fail("\"tools\" must be an array of tool names, got " + std::string(kind_name(*r.get("tools"))),
             r.line_of("tools"));
  }
  std::vector<std::string> names = r.lines("tools", true);
  std::set<std::string, std::less<>> seen;
  for (const auto& n : names) {
    if (!is_valid_tool_name(n)) {
      src.fail("\"tools\" entry \"" + n + "\" is not a tool name ([A-Za-z0-9_.:/-]{1,128}, e.g. "
               "calendar.lookup or mcp:files/read_file)",
               r.line_of("tools"));
    }
    if (!seen.insert(n).second) src.fail("\"tools\" names \"" + n + "\" twice", r.line_of("tools"));
  }
  return names;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         (static_cast<unsigned char>(c) >= 0x80);  // inside a UTF-8 sequence
}

std::string format_number(double d) { return render_value(json::value(d)); }

}  // namespace

bool prompt_policy::matches(std::string_view text) const {
  const std::string haystack = lowercase(text);
  for (const auto& trigger : triggers) {
    const std::string needle = lowercase(trigger);
    for (auto pos = haystack.find(needle); pos != std::string::npos;
         pos = haystack.find(needle, pos + 1)) {
      const bool starts = pos == 0 || !is_word_char(haystack[pos - 1]);
      const auto end = pos + needle.size();
      const bool ends = end == haystack.size() || !is_word_char(haystack[end]);
      if (starts && ends) return true;
    }
  }
  return false;
}

bool confidence_rule::holds(const json::value& envelope_json) const {
  boost::system::error_code ec;
  const json::value* found = envelope_json.find_pointer(pointer, ec);
  const bool present = found != nullptr && !found->is_null();
  switch (when) {
    case condition::present: return present;
    case condition::absent: return !present;
    case condition::equals:
      if (found == nullptr) return false;
      if (found->is_number() && value.is_number()) {
        return found->to_number<double>() == value.to_number<double>();
      }
      return *found == value;
  }
  return false;
}

std::string confidence_rule::describe() const {
  std::string out = (add >= 0 ? "+" : "") + format_number(add) + " when " + pointer;
  switch (when) {
    case condition::present: return out + " is present";
    case condition::absent: return out + " is absent";
    case condition::equals: return out + " equals " + json::serialize(value);
  }
  return out;
}

std::string confidence_rules::apply(protocol::envelope& e) const {
  const json::value as_json = json::value_from(e);
  std::string note = "Confidence rules: ";
  double c = e.confidence;
  if (base) {
    note += "base " + format_number(*base) + " (model said " + format_number(e.confidence) + ")";
    c = *base;
  } else {
    note += "model said " + format_number(e.confidence);
  }
  for (const auto& rule : rules) {
    if (!rule.holds(as_json)) continue;
    note += "; " + rule.describe();
    c += rule.add;
  }
  c = std::clamp(c, min, max);
  note += "; result " + format_number(c) + ".";
  e.confidence = c;
  return note;
}

std::string prompt_file::version_tag() const { return name + ".v" + std::to_string(version); }

std::optional<std::pair<std::string, int>> parse_prompt_file_name(std::string_view file_name) {
  if (!file_name.ends_with(".json")) return std::nullopt;
  file_name.remove_suffix(5);
  const auto dot_v = file_name.rfind(".v");
  if (dot_v == std::string_view::npos || dot_v == 0) return std::nullopt;
  const auto digits = file_name.substr(dot_v + 2);
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const int version = std::stoi(std::string(digits));
  if (version < 1) return std::nullopt;
  return std::pair{std::string(file_name.substr(0, dot_v)), version};
}

prompt_file prompt_file::parse(std::string_view json_text, std::string source) {
  const source_text src{source, json_text};
  const json::value doc = parse_json(src);
  if (!doc.is_object()) src.fail("a prompt file must be a JSON object, got " + std::string(kind_name(doc)));
  const member_reader r(src, doc.get_object(), "");
  r.allow_only({"name", "version", "description", "output_schema", "input_schema", "model", "system",
                "user", "policies", "confidence_rules", "explanation_template", "tools"});
  prompt_file pf;
  pf.path = source;
  pf.name = r.string("name", true);
  const auto version = r.integer("version", 1);
  if (!version) src.fail("missing required member \"version\" (an integer >= 1)");
  pf.version = static_cast<int>(*version);
  pf.description = r.string("description", true);
  pf.output_schema = r.string("output_schema", true);
  check_schema_id(src, r, "output_schema", pf.output_schema);
  if (r.get("input_schema")) {
    pf.input_schema = r.string("input_schema", true);
    check_schema_id(src, r, "input_schema", *pf.input_schema);
  }
  pf.model = read_model(src, r.get("model"), r.key_offset("model"));
  pf.system = read_template(src, r, "system", false, template_kind::prompt, "system");
  pf.user = read_template(src, r, "user", true, template_kind::prompt, "user");
  pf.policies = read_policies(src, r.get("policies"), r.key_offset("policies"));
  pf.tools = read_tools(src, r);
  pf.confidence = read_confidence(src, r.get("confidence_rules"), r.key_offset("confidence_rules"));
  if (r.get("explanation_template")) {
    pf.explanation_template = read_template(src, r, "explanation_template", true,
                                            template_kind::explanation, "explanation_template");
  }
  return pf;
}

prompt_file prompt_file::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw agent_error(agent_errc::prompt_file_invalid,
                      file.string() + ": cannot open prompt file (" +
                          (std::filesystem::exists(file) ? "not readable" : "no such file") + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  prompt_file pf = parse(text.str(), file.string());
  const auto expected = parse_prompt_file_name(file.filename().string());
  if (!expected) {
    throw agent_error(agent_errc::prompt_file_invalid,
                      file.string() + ": prompt files are named <name>.v<version>.json, e.g. " +
                          pf.version_tag() + ".json");
  }
  if (expected->first != pf.name || expected->second != pf.version) {
    throw agent_error(agent_errc::prompt_file_invalid,
                      file.string() + ": the file name says " + expected->first + " version " +
                          std::to_string(expected->second) + " but the file declares " + pf.name +
                          " version " + std::to_string(pf.version) + "; rename it to " +
                          pf.version_tag() + ".json");
  }
  return pf;
}

}  // namespace switchboard::agents
