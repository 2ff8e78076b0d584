// A plugin that claims another plugin ABI version: the loader must refuse it
// before calling its init.
#include <switchboard/agents/plugin.hpp>

extern "C" SWITCHBOARD_PLUGIN_EXPORT int switchboard_plugin_abi_version(void) {
  return SWITCHBOARD_PLUGIN_ABI_VERSION + 41;
}

extern "C" SWITCHBOARD_PLUGIN_EXPORT int switchboard_plugin_init(switchboard_plugin_registrar*, int) {
  return switchboard::agents::plugin_init_ok;
}
