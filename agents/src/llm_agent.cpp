// llm_agent: prompt file + envelope schema + complete_structured.
#include <switchboard/agents/llm_agent.hpp>

#include <switchboard/agents/agent_registry.hpp>
#include <switchboard/models/structured.hpp>
#include <switchboard/agents/tool_registry.hpp>
#include <switchboard/protocol/error.hpp>

#include <switchboard/models/detail/structured_ladder.hpp>
#include "tool_loop.hpp"

#include <boost/json/value_to.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <set>

namespace switchboard::agents {

namespace {

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

void check_versions(const std::vector<prompt_file>& versions) {
  if (versions.empty()) {
    throw agent_error(agent_errc::prompt_file_invalid, "llm_agent: no prompt file given");
  }
  const auto& first = versions.front();
  for (const auto& v : versions) {
    if (v.name != first.name) {
      throw agent_error(agent_errc::prompt_file_invalid,
                        v.path.string() + ": prompt '" + v.name + "' mixed with prompt '" +
                            first.name + "' in one agent");
    }
    if (v.output_schema != first.output_schema) {
      throw agent_error(agent_errc::prompt_file_invalid,
                        v.path.string() + ": output_schema " + v.output_schema + " differs from " +
                            first.output_schema + " in " + first.path.string() +
                            "; all versions of one agent share its output schema");
    }
  }
}

// Explanation variables must name members the data schema declares, when it
// declares any: a typo fails at start-up rather than at the first answer.
void check_explanation_variables(const prompt_file& pf, const boost::json::value& data_schema) {
  if (!pf.explanation_template) return;
  const auto* obj = data_schema.if_object();
  const auto* props = obj ? obj->if_contains("properties") : nullptr;
  if (!props || !props->is_object()) return;
  for (const auto& v : pf.explanation_template->variables()) {
    const auto second = v.pointer.find('/', 1);
    std::string member = v.pointer.substr(1, second == std::string::npos ? std::string::npos : second - 1);
    if (member.find('~') != std::string::npos) continue;  // escaped pointer: leave to render time
    if (!props->get_object().contains(member)) {
      throw agent_error(agent_errc::template_variable_unknown,
                        pf.explanation_template->origin().describe(v.line) + ": {{" + v.text +
                            "}}: schema " + pf.output_schema + " declares no member \"" + member +
                            "\"");
    }
  }
}

// The text a policy's triggers are matched against.
std::string policy_haystack(const prompt_policy& policy, const agent_context& context) {
  std::string text;
  for (const auto& source : policy.match_on) {
    std::string part;
    if (source == "input") {
      part = render_value(context.input);
    } else if (source.starts_with("input/")) {
      boost::system::error_code ec;
      if (const auto* v = context.input.find_pointer(source.substr(5), ec)) part = render_value(*v);
    } else if (source == "additional_instructions") {
      part = context.additional_instructions;
    } else if (source == "clarification_answers") {
      part = join({context.clarification_answers.begin(), context.clarification_answers.end()}, "\n");
    }
    if (!part.empty()) text += part + "\n";
  }
  return text;
}

std::string sanitize_schema_name(std::string_view agent_name) {
  // Providers accept ^[a-zA-Z0-9_-]{1,64}$ as a schema name.
  std::string out;
  for (char c : agent_name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    out += ok ? c : '_';
  }
  out += "_envelope";
  return out.substr(0, 64);
}

protocol::envelope failure_envelope(std::string_view agent_name, const model_error& e,
                                    std::string type) {
  protocol::error_record record;
  record.type = std::move(type);
  record.message = "agent '" + std::string(agent_name) + "': " + e.what();
  record.retryable = false;
  return protocol::make_error_envelope(
      std::move(record),
      "The " + std::string(agent_name) + " agent could not produce a valid answer.");
}

boost::json::array attempts_json(const std::vector<attempt_record>& attempts) {
  boost::json::array out;
  for (const auto& a : attempts) out.push_back(a.to_json());
  return out;
}

}  // namespace

llm_agent::llm_agent(std::vector<prompt_file> versions,
                     std::shared_ptr<protocol::schema_registry> schemas, llm_agent_options options)
    : versions_(std::move(versions)), schemas_(std::move(schemas)), options_(std::move(options)) {
  if (!schemas_) throw std::invalid_argument("llm_agent: schema registry is null");
  check_versions(versions_);
  std::ranges::sort(versions_, {}, &prompt_file::version);
  const prompt_file& pf = versions_.back();
  const auto data_schema = schemas_->find(pf.output_schema);
  if (!data_schema) {
    throw agent_error(agent_errc::unknown_output_schema,
                      pf.path.string() + ": agent '" + pf.name + "' declares output_schema " +
                          pf.output_schema + ", which is not in the schema registry");
  }
  envelope_schema_ = schemas_->envelope_schema(pf.output_schema);
  if (options_.max_tool_rounds < 0 || options_.tool_timeout <= std::chrono::milliseconds::zero() ||
      options_.max_tool_result_bytes == 0) {
    throw std::invalid_argument("llm_agent: max_tool_rounds must be >= 0, tool_timeout and "
                                "max_tool_result_bytes positive");
  }
  for (const auto& v : versions_) {
    check_explanation_variables(v, data_schema->json());
    for (const auto& t : v.tools) {
      if (options_.tools != nullptr && !options_.tools->contains(t)) {
        throw agent_error(agent_errc::unknown_tool,
                          v.path.string() + ": \"tools\" names '" + t + "', which is not registered");
      }
    }
    for (const auto& extra : options_.extra_policies) {
      if (std::ranges::any_of(v.policies, [&](const auto& p) { return p.name == extra.name; })) {
        throw agent_error(agent_errc::prompt_file_invalid,
                          v.path.string() + ": policy '" + extra.name +
                              "' is declared in the file and passed as an extra policy");
      }
    }
  }
}

bool llm_agent::uses_tools() const noexcept {
  if (options_.tools == nullptr) return false;
  return std::ranges::any_of(versions_, [](const prompt_file& p) { return !p.tools.empty(); });
}

std::shared_ptr<llm_agent> llm_agent::from_library(const prompt_library& library,
                                                   std::string_view name,
                                                   std::shared_ptr<protocol::schema_registry> schemas,
                                                   llm_agent_options options) {
  auto versions = library.all_versions(name);
  if (versions.empty()) library.at(name);  // throws naming what is loaded
  return std::make_shared<llm_agent>(std::move(versions), std::move(schemas), std::move(options));
}

std::string_view llm_agent::name() const noexcept { return versions_.back().name; }
std::string_view llm_agent::description() const noexcept { return versions_.back().description; }
std::string llm_agent::output_schema() const { return versions_.back().output_schema; }
std::optional<std::string> llm_agent::input_schema() const { return versions_.back().input_schema; }
std::string llm_agent::prompt_version() const { return versions_.back().version_tag(); }

const prompt_file& llm_agent::select(std::string_view requested) const {
  const int wanted = parse_prompt_version(name(), requested);
  if (wanted == 0) return versions_.back();
  for (const auto& v : versions_) {
    if (v.version == wanted) return v;
  }
  std::vector<std::string> have;
  for (const auto& v : versions_) have.push_back(std::to_string(v.version));
  throw agent_error(agent_errc::unknown_prompt_version,
                    "agent '" + std::string(name()) + "': no prompt version " +
                        std::to_string(wanted) + " (loaded: " + join(have, ", ") + ")");
}

chat_request llm_agent::build_request(const agent_context& context, const prompt_file& prompt,
                                      std::vector<std::string>& applied) const {
  prompt_scope scope;
  scope.input = &context.input;
  scope.outputs = &context.outputs;
  scope.additional_instructions = context.additional_instructions;
  scope.clarification_answers = context.clarification_answers;

  std::vector<std::string> fragments;
  auto consider = [&](const prompt_policy& policy) {
    if (!policy.matches(policy_haystack(policy, context))) return;
    applied.push_back(policy.name);
    fragments.push_back(policy.instructions.render(scope));
  };
  for (const auto& p : prompt.policies) consider(p);
  for (const auto& p : options_.extra_policies) consider(p);
  const std::string policies_text = join(fragments, "\n");
  scope.policies = policies_text;

  std::string system = prompt.system.render(scope);
  std::string user = prompt.user.render(scope);
  // An answer the prompt does not place still reaches the model: a re-run
  // after a clarification must not ask the same question blind.
  const bool places_answers = prompt.system.uses("clarification_answers") || prompt.user.uses("clarification_answers");
  if (!context.clarification_answers.empty() && !places_answers) {
    user += "\n\nThe user's answers to your clarification questions, oldest first:\n" +
            join({context.clarification_answers.begin(), context.clarification_answers.end()}, "\n");
  }
  // Policies go where the template puts {{policies}}, else after the system prompt.
  if (!policies_text.empty() && !prompt.system.uses("policies") && !prompt.user.uses("policies")) {
    system += system.empty() ? policies_text : "\n\n" + policies_text;
  }

  chat_request request;
  if (!system.empty()) request.messages.push_back({chat_role::system, std::move(system)});
  request.messages.push_back({chat_role::user, user});
  request.model = prompt.model.model;
  request.temperature = prompt.model.temperature;
  request.max_tokens = prompt.model.max_tokens;
  request.prompt_version = prompt.version_tag();
  request.stream = context.stream.get();  // streaming: the hub's sink, if any (agent_context.hpp)
  // Tracing on: the requests are children of the step's span (trace_parents.hpp).
  if (context.traces) request.trace = context.traces->step_span(context.workflow_id);
  return request;
}

struct llm_agent::prepared_call {
  const prompt_file* prompt = nullptr;
  std::vector<std::string> applied;  // policies that matched
  // complete_structured for this call, created but not started: the request
  // and options live in the ladder's call (owned by its frame), not also in
  // run()'s frame (which lasts as long as the model call). It writes its
  // result into run()'s frame.
  boost::asio::awaitable<void> answer;
};

llm_agent::prepared_call llm_agent::prepare(agent_context& context, structured_result& result) const {
  prepared_call call;
  call.prompt = &select(context.prompt_version);
  const prompt_file& prompt = *call.prompt;
  chat_request request = build_request(context, prompt, call.applied);

  chat_model* model = context.models.find(prompt.model.role);
  if (model == nullptr) {
    throw model_error(model_errc::not_configured,
                      "agent '" + std::string(name()) + "': no model configured for role '" +
                          prompt.model.role + "' (nor a default one)");
  }

  structured_options options;
  options.schema = envelope_schema_;
  options.schema_name = sanitize_schema_name(name());
  options.max_attempts = prompt.model.max_attempts;
  options.token_budget = prompt.model.token_budget;
  options.force_mode = prompt.model.mode;
  options.metrics = options_.metrics;
  // The invoker's limits (--max-attempts, --timeout, --mode) win over the
  // prompt file's: the person waiting decides how long and how often.
  apply_call_limits(context.models.limits(), options);

  context.used_prompt_version = prompt.version_tag();
  context.applied_policies = call.applied;
  context.logger->debug("agent {}: prompt {}, policies [{}], model role {}", name(),
                        prompt.version_tag(), join(call.applied, ", "), prompt.model.role);
  if (options_.tools != nullptr && !prompt.tools.empty()) {
    detail::tool_loop_settings loop;
    loop.tools = options_.tools;
    loop.allowed = &prompt.tools;
    loop.agent = std::string(name());
    loop.max_rounds = options_.max_tool_rounds;
    loop.tool_timeout = options_.tool_timeout;
    loop.max_result_bytes = options_.max_tool_result_bytes;
    call.answer = detail::run_tool_loop(*model, std::move(request), std::move(options), std::move(loop), context,
                                        result);
  } else {
    call.answer = models::detail::complete_structured_into(*model, std::move(request), std::move(options), result);
  }
  return call;
}

boost::asio::awaitable<protocol::envelope> llm_agent::run(agent_context& context) {
  structured_result result;
  prepared_call call = prepare(context, result);
  try {
    co_await std::move(call.answer);
  } catch (const structured_output_error& e) {
    context.usage += e.usage();
    // The refused answer and why, for the step's record.
    context.raw_text = e.last_text();
    context.model_attempts = attempts_json(e.attempts());
    const std::string type(to_string(e.errc()));
    context.logger->warn("agent {}: no valid answer ({}): {}", name(), type, e.what());
    co_return failure_envelope(name(), e, type);
  }
  co_return finish(context, call, std::move(result));
}

protocol::envelope llm_agent::finish(agent_context& context, const prepared_call& call,
                                     structured_result result) const {
  context.usage += result.usage;
  // The answer as the model wrote it, for the step's record: what the
  // envelope was parsed (or repaired) from.
  context.raw_text = std::move(result.last.text);
  context.model_attempts = attempts_json(result.attempts);
  auto converted = protocol::take_envelope(std::move(result.value));
  if (!converted) {
    // complete_structured validated against the envelope schema; a value
    // that still does not convert is a schema/converter disagreement.
    return protocol::make_error_envelope(
        {"invalid_envelope",
         "agent '" + std::string(name()) + "': validated answer does not convert to an envelope: " +
             converted.error().message(),
         false, {}},
        "The " + std::string(name()) + " agent could not produce a valid answer.");
  }
  protocol::envelope out = std::move(*converted);

  const prompt_file& prompt = *call.prompt;
  if (!prompt.confidence.empty()) {
    out.reasoning += (out.reasoning.empty() ? "" : "\n") + prompt.confidence.apply(out);
  }
  if (prompt.explanation_template) out.explanation = prompt.explanation_template->render(out.data);
  if (!call.applied.empty()) {
    out.reasoning += (out.reasoning.empty() ? "" : "\n") +
                     std::string("Prompt policies applied: ") + join(call.applied, ", ") + ".";
  }
  context.logger->info("agent {}: prompt {}, confidence {:.2f}, {} attempt(s), {} tokens", name(),
                       prompt.version_tag(), out.confidence, result.attempts.size(),
                       result.usage.total());
  return out;
}

namespace {

// Every tool every version of every prompt names must be registered.
void check_prompt_tools(const prompt_library& library, const tool_registry& tools) {
  for (const auto& name : library.names()) {
    for (const auto& pf : library.all_versions(name)) {
      for (const auto& t : pf.tools) {
        if (tools.contains(t)) continue;
        const auto known = tools.names();
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        throw agent_error(agent_errc::unknown_tool,
                          pf.path.string() + ": \"tools\" names '" + t + "', which is not registered; tools: " +
                              (list.empty() ? std::string("(none)") : list));
      }
    }
  }
}

}  // namespace

std::size_t register_prompt_agents(agent_registry& registry, const prompt_library& library,
                                   llm_agent_options options, const tool_registry* tools) {
  if (tools != nullptr) {
    check_prompt_tools(library, *tools);
    options.tools = tools;
  }
  std::size_t count = 0;
  for (const auto& name : library.names()) {
    auto a = llm_agent::from_library(library, name, registry.schemas_ptr(), options);
    const std::string origin = "prompt:" + a->newest().path.string();
    registry.add(std::move(a), origin);
    ++count;
  }
  return count;
}

}  // namespace switchboard::agents
