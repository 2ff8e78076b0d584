// A shared library without the plugin entry points.
extern "C" __attribute__((visibility("default"))) int not_a_switchboard_plugin(void) { return 1; }
