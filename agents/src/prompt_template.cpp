// prompt_template: parse once (syntax and roots checked at load time), render
// many times (values looked up per run).
#include <switchboard/agents/prompt_template.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <array>
#include <charconv>
#include <cmath>

namespace switchboard::agents {

namespace {

constexpr std::string_view prompt_roots_help =
    "input, input/<pointer>, outputs.<agent>[/<pointer>], additional_instructions, "
    "clarification_answers[/<index>], policies";
constexpr std::string_view explanation_roots_help = "<member of data> or /<pointer into data>";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits "input/request" into root "input" and pointer "/request".
std::pair<std::string_view, std::string_view> split_root(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return {text, {}};
  return {text.substr(0, slash), text.substr(slash)};
}

bool is_agent_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

[[noreturn]] void fail(agent_errc code, const template_origin& origin, int line,
                       const std::string& what) {
  throw agent_error(code, origin.describe(line) + ": " + what);
}

// Resolves the variable's root and pointer for the template kind, or throws.
template_variable classify(std::string_view raw, int line, const template_origin& origin,
                           template_kind kind) {
  template_variable v;
  v.line = line;
  std::string_view text = trim(raw);
  if (!text.empty() && text.back() == '?') {
    v.optional = true;
    text = trim(text.substr(0, text.size() - 1));
  }
  v.text = std::string(text);
  if (text.empty()) {
    fail(agent_errc::prompt_file_invalid, origin, line, "empty variable {{" + std::string(raw) + "}}");
  }
  if (kind == template_kind::explanation) {
    v.root = "data";
    v.pointer = text.front() == '/' ? std::string(text) : "/" + std::string(text);
    if (text.front() != '/' && text.find('/') != std::string_view::npos) {
      fail(agent_errc::template_variable_unknown, origin, line,
           "unknown variable {{" + v.text + "}}; use " + std::string(explanation_roots_help));
    }
    return v;
  }
  auto [root, pointer] = split_root(text);
  v.pointer = std::string(pointer);
  if (root == "input" || root == "clarification_answers") {
    v.root = std::string(root);
    return v;
  }
  if ((root == "additional_instructions" || root == "policies") && pointer.empty()) {
    v.root = std::string(root);
    return v;
  }
  if (root.starts_with("outputs.") && is_agent_name(root.substr(8))) {
    v.root = "outputs";
    v.agent = std::string(root.substr(8));
    return v;
  }
  fail(agent_errc::template_variable_unknown, origin, line,
       "unknown variable {{" + v.text + "}}; known: " + std::string(prompt_roots_help));
}

std::string render_number(double d) {
  if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 1e15) {
    return std::to_string(static_cast<long long>(d));
  }
  std::array<char, 64> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), d);
  return std::string(buf.data(), res.ptr);
}

}  // namespace

std::string template_origin::describe(int template_line) const {
  std::string out = file;
  const auto index = static_cast<std::size_t>(template_line - 1);
  if (template_line >= 1 && index < file_lines.size() && file_lines[index] > 0) {
    out += ":" + std::to_string(file_lines[index]);
  }
  out += ": " + (field.empty() ? std::string("template") : field) + " line " +
         std::to_string(template_line);
  return out;
}

std::string render_value(const boost::json::value& value) {
  switch (value.kind()) {
    case boost::json::kind::string: return std::string(value.get_string());
    case boost::json::kind::int64: return std::to_string(value.get_int64());
    case boost::json::kind::uint64: return std::to_string(value.get_uint64());
    case boost::json::kind::double_: return render_number(value.get_double());
    default: return boost::json::serialize(value);
  }
}

prompt_template prompt_template::parse(std::string_view text, template_origin origin,
                                       template_kind kind) {
  const std::string one(text);
  return parse(std::span<const std::string>(&one, 1), std::move(origin), kind);
}

prompt_template prompt_template::parse(std::span<const std::string> lines, template_origin origin,
                                       template_kind kind) {
  prompt_template t;
  t.kind_ = kind;
  // Split every entry into physical lines, remembering each one's file line.
  std::vector<std::string> physical;
  std::vector<int> file_lines;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int base = i < origin.file_lines.size() ? origin.file_lines[i] : 0;
    std::string_view rest = lines[i];
    while (true) {
      const auto nl = rest.find('\n');
      physical.emplace_back(rest.substr(0, nl));
      // A multi-line string sits on one file line; keep pointing at it.
      file_lines.push_back(base);
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
  }
  origin.file_lines = std::move(file_lines);
  t.origin_ = std::move(origin);

  std::string literal;
  for (std::size_t i = 0; i < physical.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    std::string_view rest = physical[i];
    if (i > 0) literal += '\n';
    while (true) {
      const auto open = rest.find("{{");
      if (open == std::string_view::npos) {
        literal += rest;
        break;
      }
      literal += rest.substr(0, open);
      const auto close = rest.find("}}", open + 2);
      if (close == std::string_view::npos) {
        fail(agent_errc::prompt_file_invalid, t.origin_, line,
             "'{{' without a closing '}}' on the same line");
      }
      t.variables_.push_back(
          classify(rest.substr(open + 2, close - open - 2), line, t.origin_, kind));
      t.segments_.push_back({std::move(literal), t.variables_.size() - 1});
      literal.clear();
      rest.remove_prefix(close + 2);
    }
  }
  if (!literal.empty()) t.segments_.push_back({std::move(literal), {}});
  return t;
}

bool prompt_template::uses(std::string_view root) const noexcept {
  for (const auto& v : variables_) {
    if (v.root == root) return true;
  }
  return false;
}

std::string prompt_template::render(const prompt_scope& scope) const {
  return render_with(&scope, nullptr);
}

std::string prompt_template::render(const boost::json::object& data) const {
  return render_with(nullptr, &data);
}

namespace {

// Looks `pointer` up in `value`; nullptr when absent.
const boost::json::value* at_pointer(const boost::json::value& value, std::string_view pointer) {
  if (pointer.empty()) return &value;
  boost::system::error_code ec;
  return value.find_pointer(pointer, ec);
}

// Looks `pointer` up in `object` without copying it into a value: the
// first token picks the member, find_pointer does the rest. Nullptr when
// absent; `pointer` must not be empty.
const boost::json::value* at_pointer(const boost::json::object& object, std::string_view pointer) {
  if (!pointer.starts_with('/')) return nullptr;
  const auto end = pointer.find('/', 1);
  const std::string_view raw = pointer.substr(1, end == std::string_view::npos ? pointer.npos : end - 1);
  std::string token;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '~') {
      token += raw[i];
    } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
      token += raw[++i] == '0' ? '~' : '/';
    } else {
      return nullptr;  // not a JSON Pointer escape: as find_pointer, nothing found
    }
  }
  const auto* member = object.if_contains(token);
  if (member == nullptr || end == std::string_view::npos) return member;
  return at_pointer(*member, pointer.substr(end));
}

std::string join_lines(std::span<const std::string> items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += '\n';
    out += s;
  }
  return out;
}

}  // namespace

std::string prompt_template::render_with(const prompt_scope* scope,
                                         const boost::json::object* data) const {
  std::string out;
  for (const auto& seg : segments_) {
    out += seg.literal;
    if (!seg.variable) continue;
    const template_variable& v = variables_[*seg.variable];
    std::optional<std::string> value;
    std::string missing;  // why it could not be resolved
    // Holders for values built on the fly (an agent's envelope as JSON).
    boost::json::value holder;
    auto found = [&](const boost::json::value* at, std::string_view what) {
      if (at != nullptr) {
        value = render_value(*at);
      } else {
        missing = std::string(what) + " has no value at " + v.pointer;
      }
    };
    auto lookup = [&](const boost::json::value& base, std::string_view what) {
      found(at_pointer(base, v.pointer), what);
    };
    // Objects are looked into, and written whole, in place.
    auto lookup_object = [&](const boost::json::object& base, std::string_view what) {
      if (v.pointer.empty()) {
        value = boost::json::serialize(base);  // what render_value() writes for an object
      } else {
        found(at_pointer(base, v.pointer), what);
      }
    };
    if (data != nullptr) {
      lookup_object(*data, "the agent's data");
    } else if (v.root == "input") {
      if (scope->input != nullptr) {
        lookup(*scope->input, "the workflow input");
      } else {
        missing = "no workflow input";
      }
    } else if (v.root == "outputs") {
      const protocol::envelope* env =
          scope->outputs != nullptr ? scope->outputs->latest(v.agent) : nullptr;
      if (env != nullptr && v.pointer == "/data") {  // all of the data: written without a copy
        value = boost::json::serialize(env->data);
      } else if (env != nullptr && v.pointer.starts_with("/data/")) {  // the usual case: no copy of the envelope
        if (const auto* at = at_pointer(env->data, std::string_view(v.pointer).substr(5))) {
          value = render_value(*at);
        } else {
          missing = "the output of agent '" + v.agent + "' has no value at " + v.pointer;
        }
      } else if (env != nullptr) {
        holder = boost::json::value_from(*env);
        lookup(holder, "the output of agent '" + v.agent + "'");
      } else {
        std::string have;
        if (scope->outputs != nullptr) {
          for (const auto& n : scope->outputs->agent_names()) have += (have.empty() ? "" : ", ") + n;
        }
        missing = "agent '" + v.agent + "' has not produced output (outputs so far: " +
                  (have.empty() ? std::string("none") : have) + ")";
      }
    } else if (v.root == "additional_instructions") {
      value = std::string(scope->additional_instructions);
    } else if (v.root == "policies") {
      value = std::string(scope->policies);
    } else if (v.root == "clarification_answers") {
      if (v.pointer.empty()) {
        value = join_lines(scope->clarification_answers);
      } else {
        boost::json::array answers;
        for (const auto& a : scope->clarification_answers) answers.emplace_back(a);
        holder = std::move(answers);
        lookup(holder, "clarification_answers (" +
                           std::to_string(scope->clarification_answers.size()) + " so far)");
      }
    }
    if (value) {
      out += *value;
    } else if (!v.optional) {
      fail(agent_errc::template_variable_unknown, origin_, v.line,
           "{{" + v.text + "}} cannot be resolved: " + missing);
    }
  }
  return out;
}

}  // namespace switchboard::agents
