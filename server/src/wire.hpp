// The JSON shapes of the LangGraph API made from Switchboard's own: a
// run's state as a thread's values, its pause as an interrupt, its steps as
// checkpoints; and the records as the client reads them.
#pragma once

#include "catalog.hpp"

#include <switchboard/orchestrator/workflow_state.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>

namespace switchboard::server {

// {"input", "outputs": {agent: envelope}, "status", "step", "result"}; a
// paused run's values also carry "__interrupt__": [{id, value}].
boost::json::object values_of(const orchestrator::workflow_state& state);

// The pending question or approval of a paused run as interrupts
// [{id, value}] (empty when it is not paused). The value says what is asked:
// {"type": "clarification", question, node, agent} or
// {"type": "approval", node, calls: [{id, tool, description, arguments, agent}]}.
boost::json::array interrupts_of(const orchestrator::workflow_state& state);
// The task (node) that continues the run, for thread.interrupts and state.tasks.
std::string task_id_of(const orchestrator::workflow_state& state);

// GET /threads/{id}/state: the run's last saved step as a ThreadState.
boost::json::object thread_state(const thread_record& thread, const std::optional<orchestrator::workflow_state>& state);
// POST /threads/{id}/history: one ThreadState per saved step, newest first.
boost::json::array thread_history(const thread_record& thread, const orchestrator::workflow_state& state,
                                  std::size_t limit);

boost::json::object to_wire(const assistant_record& a);
boost::json::object to_wire(const thread_record& t);
boost::json::object to_wire(const run_record& r);

}  // namespace switchboard::server
