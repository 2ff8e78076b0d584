// The sample's plugin, `scheduling`: what examples/scheduling/workflow.json
// names in "plugins". Its set-up and configuration keys are in
// plugin_setup.cpp (register_scheduling_plugin), which tests call
// in-process.
#include <switchboard/agents/plugin.hpp>
#include <switchboard/scheduling/agents.hpp>

SWITCHBOARD_PLUGIN(registrar) { switchboard::scheduling::register_scheduling_plugin(registrar); }
