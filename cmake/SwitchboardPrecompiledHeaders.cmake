# Precompiled headers (SWITCHBOARD_PRECOMPILE_HEADERS), for the test suites.
#
# Why: every test file parses GoogleTest/GoogleMock, Boost.JSON, Boost.System
# and the Asio coroutine headers before a line of its own. Measured with
# g++ 12 -ftime-report, parsing is 20-30 % of a file's compile time at -O2;
# with the shared PCH a test file compiles ~18 % faster (hub_test.cpp: 28 s -> 23 s).
#
# What goes in: only headers of dependencies and the standard library, never
# a Switchboard header, so an edit in the project does not rebuild the PCH and
# every file behind it.
#
# Not the libraries: g++ 12 does not keep `#pragma GCC diagnostic` in a PCH
# (GCC PR 64117, fixed in 13), so libstdc++'s own suppression of its
# -Warray-bounds/-Wstringop-* false positives in <string> (bits/char_traits.h)
# is lost, and the libraries, built with a PCH, warned where they are clean.
# The shipped code keeps its full warnings; the tests get the same three
# suppressions libstdc++ applies, on g++ < 13 only (tests/CMakeLists.txt).
#
# A PCH is also an implicit include: a test file that forgets an #include still
# builds; -DSWITCHBOARD_PRECOMPILE_HEADERS=OFF catches it.

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

# Test suites: all of them share one PCH (tests/CMakeLists.txt).
set(switchboard_pch_tests        ${switchboard_pch_std} ${switchboard_pch_json} ${switchboard_pch_asio}
                                 <filesystem> <fstream> <thread> <atomic>
                                 <gtest/gtest.h> <gmock/gmock.h>)

# switchboard_precompile_headers(<target> <list name>): PRIVATE, so nothing of
# it reaches the installed package or a consumer's targets.
# g++ < 13 loses libstdc++'s diagnostic pragmas in a PCH (see above).
set(switchboard_pch_gcc12_workaround
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-array-bounds -Wno-stringop-overflow -Wno-stringop-overread>)
function(switchboard_precompile_headers target list)
  if(SWITCHBOARD_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} PRIVATE ${switchboard_pch_${list}})
    target_compile_options(${target} PRIVATE ${switchboard_pch_gcc12_workaround})
  endif()
endfunction()
