// The agent layer is written in the model layer's terms: every name of
// switchboard::models (chat_model, chat_request, tool_call, model_error, ...)
// is also visible in switchboard::agents, where agents, tools and prompt
// files use them unqualified.
//
// This also keeps code written when the model layer lived inside agents/
// compiling: `agents::chat_model` still names models::chat_model. New code
// spells the model layer `models::` (ADR 0024); the old spelling goes in 0.3.
#pragma once

namespace switchboard::models {}

namespace switchboard::agents {
using namespace switchboard::models;
}  // namespace switchboard::agents
