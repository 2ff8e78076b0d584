#include <switchboard/agents/plugin.hpp>

#include <switchboard/agents/function_tool.hpp>
#include <switchboard/agents/plugin_loader.hpp>

#include "agent_test_support.hpp"

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <dlfcn.h>
#include <unistd.h>

namespace switchboard::agents {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using agent_test::code_of;
using agent_test::context_holder;
using agent_test::run_sync;

const std::filesystem::path example_plugin = SWITCHBOARD_EXAMPLE_PLUGIN;
const std::filesystem::path wrong_abi_plugin = SWITCHBOARD_WRONG_ABI_PLUGIN;
const std::filesystem::path no_entry_plugin = SWITCHBOARD_NO_ENTRY_PLUGIN;
const std::filesystem::path throwing_plugin = SWITCHBOARD_THROWING_PLUGIN;
const std::filesystem::path host_echo_plugin = SWITCHBOARD_HOST_ECHO_PLUGIN;

// Expects load_plugin(file) to fail with `code` and every part in the message.
void expect_refused(agent_registry& registry, const std::filesystem::path& file, agent_errc code,
                    std::vector<std::string> parts) {
  try {
    (void)load_plugin(registry, file);
    ADD_FAILURE() << "expected agent_error for " << file;
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), code) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(file.string()));
    for (const auto& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
  }
}

struct PluginLoader : ::testing::Test {
  std::shared_ptr<protocol::schema_registry> schemas = std::make_shared<protocol::schema_registry>();
  agent_registry registry{schemas};
};

TEST_F(PluginLoader, LoadsTheExamplePluginAndRunsItsAgent) {
  const loaded_plugin loaded = load_plugin(registry, example_plugin);
  EXPECT_EQ(loaded.file, example_plugin);
  EXPECT_THAT(loaded.agents, ElementsAre("text_stats"));
  EXPECT_THAT(loaded.schemas, ElementsAre("text_stats.output@1"));
  ASSERT_EQ(registry.list().size(), 1u);
  EXPECT_EQ(registry.list()[0].origin, "plugin:" + example_plugin.string());
  EXPECT_EQ(registry.list()[0].output_schema, "text_stats.output@1");
  EXPECT_TRUE(schemas->find("text_stats.output@1"));

  context_holder holder;
  holder.input = boost::json::parse(R"({"request": "book the big room"})");
  auto context = holder.make();
  const auto out = run_sync(registry.at("text_stats").run(context));
  EXPECT_EQ(out.data.at("words"), 4);
  EXPECT_EQ(out.data.at("longest_word"), "book");
  EXPECT_THAT(registry.validate(registry.at("text_stats"), out), IsEmpty());
}

TEST_F(PluginLoader, LibraryStaysLoadedWhileItsAgentsLiveAndReloadsAfterwards) {
  {
    agent_registry scoped(schemas);
    load_plugin(scoped, example_plugin);
    // The loader's own handle is gone; the registered agent keeps the library.
    void* handle = ::dlopen(example_plugin.c_str(), RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(handle, nullptr);
    if (handle != nullptr) ::dlclose(handle);
  }
  // The first registry (and its reference) is gone; loading again works and
  // reuses the schema the first load registered.
  agent_registry second(schemas);
  load_plugin(second, example_plugin);
  context_holder holder;
  holder.input = boost::json::parse(R"({"request": "one two"})");
  auto context = holder.make();
  EXPECT_EQ(run_sync(second.at("text_stats").run(context)).data.at("words"), 2);
}

TEST_F(PluginLoader, RefusesAnotherAbiVersionNamingBothVersions) {
  // wrong_abi_plugin.cpp claims the host's version + 41.
  expect_refused(registry, wrong_abi_plugin, agent_errc::plugin_abi_mismatch,
                 {"built against plugin ABI version " + std::to_string(plugin_abi_version + 41),
                  "this host speaks " + std::to_string(plugin_abi_version)});
  EXPECT_THAT(registry.names(), IsEmpty());
}

TEST_F(PluginLoader, RefusesALibraryWithoutTheEntryPoint) {
  expect_refused(registry, no_entry_plugin, agent_errc::plugin_missing_entry,
                 {"switchboard_plugin_abi_version", "SWITCHBOARD_PLUGIN"});
}

TEST_F(PluginLoader, RefusesAPathThatDoesNotExist) {
  expect_refused(registry, "/nonexistent/libnothing.so", agent_errc::plugin_load_failed,
                 {"no such file"});
  expect_refused(registry, std::filesystem::path(SWITCHBOARD_AGENTS_TEST_DATA),
                 agent_errc::plugin_load_failed, {"is a directory"});
}

TEST_F(PluginLoader, RefusesAFileThatIsNotASharedLibraryWithDlerrorsText) {
  const auto fake = std::filesystem::temp_directory_path() /
                    ("switchboard-fake-plugin-" + std::to_string(::getpid()) + ".so");
  std::ofstream(fake) << "not an ELF file\n";
  expect_refused(registry, fake, agent_errc::plugin_load_failed, {"dlopen failed"});
  std::filesystem::remove(fake);
}

TEST_F(PluginLoader, ThrowingRegistrationRegistersNothing) {
  expect_refused(registry, throwing_plugin, agent_errc::plugin_init_failed,
                 {"configuration database unreachable"});
  EXPECT_EQ(registry.find("never_registered"), nullptr);
}

TEST_F(PluginLoader, LoadingTheSamePluginTwiceIsADuplicate) {
  load_plugin(registry, example_plugin);
  expect_refused(registry, example_plugin, agent_errc::plugin_init_failed,
                 {"'text_stats' is already registered", "plugin:"});
  EXPECT_EQ(registry.names().size(), 1u);
}

TEST_F(PluginLoader, SchemaClashWithDifferentContentIsRefused) {
  schemas->add({"text_stats.output", 1}, boost::json::parse(R"({"type": "object"})"));
  expect_refused(registry, example_plugin, agent_errc::plugin_init_failed,
                 {"text_stats.output@1", "different content"});
  EXPECT_THAT(registry.names(), IsEmpty());
}

TEST_F(PluginLoader, PathListLoadsFilesAndDirectoriesAndReportsTheBadEntry) {
  const std::string dir = example_plugin.parent_path().string();
  const auto loaded = load_plugins(registry, "::" + dir + ":");
  ASSERT_EQ(loaded.size(), 1u);  // the example directory holds one .so
  EXPECT_THAT(registry.names(), ElementsAre("text_stats"));

  agent_registry other(std::make_shared<protocol::schema_registry>());
  try {
    (void)load_plugins(other, example_plugin.string() + ":/missing/libx.so");
    FAIL();
  } catch (const agent_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/missing/libx.so"));
  }
}

TEST_F(PluginLoader, EnvironmentVariableIsHonoured) {
  ::unsetenv("SWITCHBOARD_PLUGIN_PATH");
  EXPECT_THAT(load_plugins_from_environment(registry), IsEmpty());
  ::setenv("SWITCHBOARD_PLUGIN_PATH", example_plugin.c_str(), 1);
  const auto loaded = load_plugins_from_environment(registry);
  ::unsetenv("SWITCHBOARD_PLUGIN_PATH");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_THAT(loaded[0].agents, ElementsAre("text_stats"));
}

TEST(PluginRegistrar, InitRefusesAnotherHostVersionAndCatchesExceptions) {
  plugin_registrar registrar("inline");
  auto throwing = [](plugin_registrar&) { throw std::runtime_error("boom"); };
  EXPECT_EQ(detail::run_plugin_init(registrar.c_handle(), plugin_abi_version + 1, throwing),
            plugin_init_abi_mismatch);
  EXPECT_EQ(detail::run_plugin_init(registrar.c_handle(), plugin_abi_version, throwing),
            plugin_init_failed);
  EXPECT_EQ(registrar.failure(), "boom");
  EXPECT_EQ(detail::run_plugin_init(nullptr, plugin_abi_version, throwing), plugin_init_failed);
  plugin_registrar fine("inline");
  EXPECT_EQ(detail::run_plugin_init(fine.c_handle(), plugin_abi_version, [](plugin_registrar&) {}),
            plugin_init_ok);
}

TEST_F(PluginLoader, TheHostSettingsReachThePluginAndItsNoticesComeBack) {
  plugin_host host;
  host.base_dir = "/srv/flows";
  host.config = boost::json::object{{"data", "data"}, {"limit", 3}};
  host.state_dir = "/var/lib/flows";
  host.model_configured = true;
  host.reset_state = true;
  const auto loaded = load_plugin(registry, host_echo_plugin, host);
  EXPECT_THAT(loaded.notices, ElementsAre("host_echo: loaded with 2 config keys"));
  context_holder holder;
  auto context = holder.make();
  const auto out = run_sync(registry.at("host_echo").run(context));
  EXPECT_EQ(out.data.at("config"), host.config);
  EXPECT_EQ(out.data.at("base_dir"), "/srv/flows");
  EXPECT_EQ(out.data.at("state_dir"), "/var/lib/flows");
  EXPECT_EQ(out.data.at("model_configured"), true);
  EXPECT_EQ(out.data.at("reset_state"), true);
  // The loader hands the plugin the host's schema registry.
  EXPECT_EQ(out.data.at("has_schemas"), true);
}

class FindPlugin : public ::testing::Test {
 protected:
  FindPlugin() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sb-find-plugin-XXXXXX").string();
    root_ = ::mkdtemp(pattern.data());
    for (const auto* dir : {"first", "second"}) std::filesystem::create_directories(root_ / dir);
    std::ofstream(root_ / "second" / "calendar.so") << "x";
    std::ofstream(root_ / "first" / "librooms.so") << "x";
    std::ofstream(root_ / "second" / "rooms.so") << "x";
  }
  ~FindPlugin() override { std::filesystem::remove_all(root_); }
  std::vector<std::filesystem::path> dirs() const { return {root_ / "first", root_ / "second"}; }
  std::filesystem::path root_;
};

TEST_F(FindPlugin, ANameIsLookedUpInOrderAndAPathIsRelativeToTheBase) {
  EXPECT_EQ(find_plugin("calendar", "/base", dirs()), root_ / "second" / "calendar.so");
  // The first directory that has it wins, with or without the lib prefix.
  EXPECT_EQ(find_plugin("rooms", "/base", dirs()), root_ / "first" / "librooms.so");
  EXPECT_EQ(find_plugin("plugins/x.so", "/base", dirs()), std::filesystem::path("/base/plugins/x.so"));
  EXPECT_EQ(find_plugin("x.so", "/base", dirs()), std::filesystem::path("/base/x.so"));
  EXPECT_EQ(find_plugin("/abs/x.so", "/base", dirs()), std::filesystem::path("/abs/x.so"));
}

TEST_F(FindPlugin, AMissingNameListsWhereItWasLookedFor) {
  try {
    (void)find_plugin("weather", "/base", dirs());
    FAIL() << "found a plugin that does not exist";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::plugin_load_failed);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("plugin 'weather' not found as weather.so or libweather.so"),
                                HasSubstr((root_ / "first").string()), HasSubstr((root_ / "second").string())));
  }
  EXPECT_THROW((void)find_plugin("", "/base", dirs()), agent_error);
}

}  // namespace
}  // namespace switchboard::agents

namespace switchboard::agents {
namespace {

const std::filesystem::path tool_plugin = SWITCHBOARD_TOOL_PLUGIN;

struct ToolPluginLoader : PluginLoader {
  tool_registry tools;

  plugin_host with_config(std::string_view config) {
    plugin_host host;
    host.config = boost::json::parse(config).as_object();
    return host;
  }
};

TEST_F(ToolPluginLoader, RegistersItsAgentAndToolTiedToTheLibrary) {
  std::shared_ptr<tool> kept;
  tool_arguments args;
  {
    agent_registry scoped_agents(schemas);
    tool_registry scoped_tools;
    const auto loaded = load_plugin(scoped_agents, scoped_tools, tool_plugin);
    EXPECT_THAT(loaded.agents, ElementsAre("tool_plugin_agent"));
    EXPECT_THAT(loaded.tools, ElementsAre("plugin.shout"));
    ASSERT_EQ(scoped_tools.list().size(), 1u);
    EXPECT_EQ(scoped_tools.list()[0].origin, "plugin:" + tool_plugin.string());
    EXPECT_TRUE(scoped_tools.list()[0].idempotent);
    args = scoped_tools.validate_arguments("plugin.shout", R"({"text": "hi there"})");
    ASSERT_TRUE(args.ok()) << args.describe("plugin.shout");
    kept = scoped_tools.find_shared("plugin.shout");
  }
  // The registries are gone: the shared_ptr alone keeps the plugin's code loaded.
  void* handle = ::dlopen(tool_plugin.c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr);
  if (handle != nullptr) ::dlclose(handle);
  tool_context context{std::make_shared<spdlog::logger>("plugin-tool-test")};
  const auto r = run_sync(kept->call(context, args.value));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), "HI THERE");
}

TEST_F(ToolPluginLoader, ThrowingInitRegistersNeitherAgentNorTool) {
  try {
    (void)load_plugin(registry, tools, tool_plugin, with_config(R"({"throw": true})"));
    ADD_FAILURE() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::plugin_init_failed);
    EXPECT_THAT(e.what(), HasSubstr("tool backend unreachable"));
  }
  EXPECT_THAT(registry.names(), IsEmpty());
  EXPECT_THAT(tools.names(), IsEmpty());
}

TEST_F(ToolPluginLoader, ABadToolSchemaRefusesThePluginWhole) {
  try {
    (void)load_plugin(registry, tools, tool_plugin, with_config(R"({"bad_schema": true})"));
    ADD_FAILURE() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::plugin_init_failed);
    EXPECT_THAT(e.what(), AllOf(HasSubstr(tool_plugin.string()), HasSubstr("plugin.shout"),
                                HasSubstr("does not compile")));
  }
  EXPECT_THAT(registry.names(), IsEmpty());
  EXPECT_THAT(tools.names(), IsEmpty());
  EXPECT_FALSE(schemas->find("tool_plugin.output@1"));
}

TEST_F(ToolPluginLoader, AToolNameTakenElsewhereRefusesThePluginNamingTheOrigin) {
  tools.add(make_function_tool<boost::json::value>("plugin.shout", "taken", boost::json::object{},
                                                   [](boost::json::value) { return boost::json::value(nullptr); }),
            "builtin");
  try {
    (void)load_plugin(registry, tools, tool_plugin);
    ADD_FAILURE() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::plugin_init_failed);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("plugin.shout"), HasSubstr("builtin")));
  }
  EXPECT_THAT(registry.names(), IsEmpty());
}

TEST_F(ToolPluginLoader, AHostWithoutAToolRegistryRefusesAPluginWithTools) {
  try {
    (void)load_plugin(registry, tool_plugin);
    ADD_FAILURE() << "expected agent_error";
  } catch (const agent_error& e) {
    EXPECT_EQ(code_of(e), agent_errc::plugin_init_failed);
    EXPECT_THAT(e.what(), HasSubstr("tool registry"));
  }
  EXPECT_THAT(registry.names(), IsEmpty());
}

}  // namespace
}  // namespace switchboard::agents
