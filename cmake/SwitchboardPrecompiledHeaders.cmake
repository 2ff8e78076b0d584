# Precompiled headers (SWITCHBOARD_PRECOMPILE_HEADERS).
#
# Why: every translation unit parses Boost.JSON, Boost.System and the Asio
# coroutine headers (and every test GoogleTest/GoogleMock) before a line of its
# own. Measured with g++ 12 -ftime-report, parsing is 20-30 % of a TU at -O2
# and the larger part at -O0; a PCH turns that into a load of a few hundred ms.
#
# What goes in: only headers of dependencies and the standard library, never
# a Switchboard header, so an edit in the project does not rebuild a PCH and
# every file behind it. Each list is what that module's files include anyway
# (protocol gets no Asio: it knows no sockets or executors).
#
# A PCH is also an implicit include. A file that forgets an #include it needs
# still builds here; a build with -DSWITCHBOARD_PRECOMPILE_HEADERS=OFF (the
# default for add_subdirectory consumers, and tests/install's consumer build)
# catches it.

set(switchboard_pch_std
  <algorithm> <array> <chrono> <cstddef> <cstdint> <functional> <map> <memory>
  <mutex> <optional> <span> <string> <string_view> <unordered_map> <utility>
  <vector>)
set(switchboard_pch_json
  <boost/json/array.hpp> <boost/json/object.hpp> <boost/json/parse.hpp>
  <boost/json/serialize.hpp> <boost/json/value.hpp> <boost/json/value_from.hpp>
  <boost/json/value_to.hpp> <boost/system/error_code.hpp> <boost/system/result.hpp>
  <boost/system/system_error.hpp>)
set(switchboard_pch_asio
  <boost/asio/any_io_executor.hpp> <boost/asio/awaitable.hpp> <boost/asio/co_spawn.hpp>
  <boost/asio/steady_timer.hpp> <boost/asio/this_coro.hpp> <boost/asio/use_awaitable.hpp>)

set(switchboard_pch_protocol     ${switchboard_pch_std} ${switchboard_pch_json})
set(switchboard_pch_agents       ${switchboard_pch_std} ${switchboard_pch_json} ${switchboard_pch_asio}
                                 <spdlog/spdlog.h>)
set(switchboard_pch_orchestrator ${switchboard_pch_agents})
# Test suites: all of them share one PCH (tests/CMakeLists.txt).
set(switchboard_pch_tests        ${switchboard_pch_std} ${switchboard_pch_json} ${switchboard_pch_asio}
                                 <filesystem> <fstream> <thread> <atomic>
                                 <gtest/gtest.h> <gmock/gmock.h>)

# switchboard_precompile_headers(<target> <list name>): PRIVATE, so nothing of
# it reaches the installed package or a consumer's targets.
function(switchboard_precompile_headers target list)
  if(SWITCHBOARD_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} PRIVATE ${switchboard_pch_${list}})
  endif()
endfunction()
