// prompt_template: the {{variable}} renderer used by prompt files (system
// and user templates, policy fragments) and by explanation templates.
//
// Syntax (see docs/prompt-files.md):
//
//   prompt templates                 what it renders
//   {{input}}                        the whole workflow input
//   {{input/request}}                the workflow input at a JSON Pointer
//   {{outputs.nl_parser/data/date}}  an earlier agent's envelope at a JSON Pointer
//   {{outputs.nl_parser}}            an earlier agent's whole envelope
//   {{additional_instructions}}      the coordinator's instructions ("" if none)
//   {{clarification_answers}}        the answers so far, one per line
//   {{clarification_answers/0}}      one answer
//   {{policies}}                     the applied prompt policies' text
//
//   explanation templates            (rendered from the agent's own data)
//   {{items_shown}}                  data's top-level member "items_shown"
//   {{/slots/0/start}}               data at a JSON Pointer
//
// A trailing '?' ({{input/note?}}) makes a variable optional: it renders as
// "" when absent. Strings render without quotes, integers and decimals as
// numbers, objects and arrays as compact JSON. "{{" with no matching "}}" on
// the same line, an empty variable and an unknown root are refused by
// parse() (agent_error, prompt_file_invalid / template_variable_unknown)
// naming the file, the file line where known, the field and the template
// line. A value that is missing when the template is rendered throws
// agent_error(template_variable_unknown) with the same location.
//
// Thread-safety: an immutable value after parse(); render() is const and
// safe to call concurrently.
#pragma once

#include <switchboard/agents/agent_context.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

// Where a template came from, so errors can point at it.
struct template_origin {
  std::string file = "<code>";  // "prompts/nl_parser.v2.json"
  std::string field;            // "user", "system", "policies[1].instructions", ...
  // The file line of each template line (index = template line - 1); 0 or
  // missing when unknown.
  std::vector<int> file_lines;

  // "prompts/x.v1.json:14: user line 3" (or without ":14" when unknown).
  std::string describe(int template_line) const;
};

enum class template_kind {
  prompt,       // roots: input, outputs.<agent>, additional_instructions, clarification_answers, policies
  explanation,  // roots: the agent's own data
};

// One {{variable}} as written in a template.
struct template_variable {
  std::string text;      // without braces, '?' and surrounding blanks: "input/request"
  std::string root;      // "input", "outputs", "additional_instructions", ..., "data"
  std::string agent;     // outputs.<agent>: the agent's name
  std::string pointer;   // JSON Pointer below the root, "" for the root itself
  bool optional = false;
  int line = 0;          // 1-based template line
};

// What a prompt template may read while it renders.
struct prompt_scope {
  const boost::json::value* input = nullptr;
  const agent_outputs* outputs = nullptr;
  std::string_view additional_instructions;
  std::span<const std::string> clarification_answers;
  std::string_view policies;
};

class prompt_template {
 public:
  prompt_template() = default;

  // Parses template lines (each may itself contain '\n'; line numbers count
  // every physical line).
  static prompt_template parse(std::span<const std::string> lines, template_origin origin,
                               template_kind kind = template_kind::prompt);
  static prompt_template parse(std::string_view text, template_origin origin,
                               template_kind kind = template_kind::prompt);

  // Renders a prompt template. Throws agent_error(template_variable_unknown).
  std::string render(const prompt_scope& scope) const;
  // Renders an explanation template from an agent's data.
  std::string render(const boost::json::object& data) const;

  const std::vector<template_variable>& variables() const noexcept { return variables_; }
  // True when some variable has this root ("policies", "input", ...).
  bool uses(std::string_view root) const noexcept;
  const template_origin& origin() const noexcept { return origin_; }
  template_kind kind() const noexcept { return kind_; }
  bool empty() const noexcept { return segments_.empty(); }

 private:
  struct segment {
    std::string literal;            // text before the variable (or the tail)
    std::optional<std::size_t> variable;  // index into variables_
  };
  std::string render_with(const prompt_scope* scope, const boost::json::object* data) const;

  template_origin origin_;
  template_kind kind_ = template_kind::prompt;
  std::vector<segment> segments_;
  std::vector<template_variable> variables_;
};

// How a template renders one JSON value: strings raw, integral numbers
// without a fraction, other numbers shortest round-trip, the rest compact JSON.
std::string render_value(const boost::json::value& value);

}  // namespace switchboard::agents
