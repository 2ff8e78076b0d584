// prompt_file: one version of an LLM-backed agent's prompt, loaded from a
// JSON file named <name>.v<version>.json (see docs/prompt-files.md):
//
//   { "name": "nl_parser", "version": 2,
//     "description": "Turns a scheduling request into structured fields.",
//     "output_schema": "nl_parser.output@1",
//     "input_schema": "scheduling.request@1",                  (optional)
//     "model": { "role": "default", "model": "gpt-4o-mini", "temperature": 0,
//                "max_tokens": 512, "output_mode": "json_schema",
//                "max_attempts": 3, "token_budget": 0 },       (all optional)
//     "system": ["You parse scheduling requests.", "{{policies}}"],
//     "user":   ["Request: {{input/request}}"],
//     "policies": [ { "name": "list_contract", "triggers": ["list", "how many"],
//                     "match_on": ["input", "additional_instructions"],
//                     "instructions": ["Report items_shown and items_total."] } ],
//     "confidence_rules": { "base": 0.5, "min": 0, "max": 1,
//                           "rules": [ { "if_present": "/data/start_time", "add": 0.3 } ] },
//     "explanation_template": "Showing {{items_shown}} of {{items_total}} items",
//     "tools": ["calendar.lookup", "mcp:files/read_file"] }        (optional)
//
// Templates and policy instructions are a string or an array of lines; with
// an array, errors name the file line of the offending template line.
// Everything is checked at load time: unknown members (a typo is an error,
// not a silently ignored field), types, the file name agreeing with name and
// version, template syntax and variable roots. Errors are
// agent_error(prompt_file_invalid or template_variable_unknown) naming the
// file, the line where known, and the member.
//
// Thread-safety: immutable values once loaded; safe to share.
#pragma once

#include <switchboard/agents/model_terms.hpp>
#include <switchboard/models/chat_model.hpp>
#include <switchboard/agents/prompt_template.hpp>
#include <switchboard/protocol/envelope.hpp>

#include <boost/json/value.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchboard::agents {

// How the agent calls its model.
struct prompt_model_settings {
  std::string role = "default";            // which model of the run's model_set
  std::string model;                       // "" = the client's default model
  std::optional<double> temperature;
  std::optional<int> max_tokens;
  std::optional<output_mode> mode;         // force a rung; nullopt = the best the model supports
  int max_attempts = 3;                    // first answer + re-asks
  std::int64_t token_budget = 0;           // 0 = unlimited
};

// Instructions added to the prompt when the request mentions a trigger.
struct prompt_policy {
  std::string name;
  // Words or phrases, matched case-insensitively on word boundaries
  // ("list" matches "List my meetings", not "listen").
  std::vector<std::string> triggers;
  // Where to look: "input" (the whole workflow input), "input/<pointer>",
  // "additional_instructions", "clarification_answers".
  std::vector<std::string> match_on = {"input", "additional_instructions"};
  prompt_template instructions;

  // True when a trigger occurs in `text`.
  bool matches(std::string_view text) const;
};

// One declared adjustment of the confidence.
struct confidence_rule {
  enum class condition { present, absent, equals };
  condition when = condition::present;
  std::string pointer;        // into the envelope: "/data/start_time"
  boost::json::value value;   // equals: the value compared with
  double add = 0.0;

  bool holds(const boost::json::value& envelope_json) const;
  // "+0.3 when /data/start_time is present"
  std::string describe() const;
};

struct confidence_rules {
  std::optional<double> base;  // set: replaces the model's own confidence
  std::vector<confidence_rule> rules;
  double min = 0.0;
  double max = 1.0;

  bool empty() const noexcept { return !base && rules.empty(); }
  // Adjusts `e.confidence` (base, matching rules in order, clamp to
  // [min, max]) and returns the sentence recorded in the reasoning:
  // "Confidence rules: base 0.5 (model said 0.9); +0.3 when /data/start_time
  // is present; result 0.8."
  std::string apply(protocol::envelope& e) const;
};

struct prompt_file {
  std::filesystem::path path;  // empty when built from code
  std::string name;
  int version = 1;
  std::string description;
  std::string output_schema;                 // name@version
  std::optional<std::string> input_schema;   // name@version
  prompt_model_settings model;
  prompt_template system;
  prompt_template user;
  std::vector<prompt_policy> policies;
  confidence_rules confidence;
  std::optional<prompt_template> explanation_template;
  // The tools the agent may call, by registry name (tool_registry.hpp),
  // in file order, each valid and named once. Recorded only: the tool loop
  // that offers them to the model comes in a later slice.
  std::vector<std::string> tools;

  // "nl_parser.v2": what goes into cache keys, audit records and
  // agent_context::used_prompt_version.
  std::string version_tag() const;

  // Loads and checks one file; its name must be <name>.v<version>.json.
  static prompt_file load(const std::filesystem::path& file);
  // Parses a prompt file's text; `source` names it in errors (and becomes
  // the path).
  static prompt_file parse(std::string_view json_text, std::string source);
};

// "nl_parser.v2.json" -> {"nl_parser", 2}; nullopt when not of that form.
std::optional<std::pair<std::string, int>> parse_prompt_file_name(std::string_view file_name);

}  // namespace switchboard::agents
