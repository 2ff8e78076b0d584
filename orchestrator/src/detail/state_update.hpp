// A person's answer in place of a node's agent (hub::update_stored_run): the
// checks and the change of state, kept apart from the claim and the save.
#pragma once

#include <switchboard/orchestrator/hub.hpp>

namespace switchboard::orchestrator::detail {

// Records `update` in `state` as a step of its own and leaves the run
// interrupted where the node's routes lead. Throws
// orchestrator_error(invalid_update) naming the workflow, node, agent or
// field, with `state` unchanged.
void apply_state_update(workflow_state& state, const compiled_workflow& workflow,
                        const agents::agent_registry& registry, state_update update);

}  // namespace switchboard::orchestrator::detail
