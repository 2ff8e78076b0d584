# Configures, builds and runs tests/install/consumer; fails with the failing
# step's output. Called by ctest (see CMakeLists.txt) with:
#   MODE          find_package | add_subdirectory
#   BUILD_DIR     the Switchboard build tree (installed from in find_package mode)
#   SOURCE_DIR    the Switchboard source tree (added in add_subdirectory mode)
#   CONSUMER_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, BUILD_TYPE, SWITCHBOARD_DEPS_DIR
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${MODE}: ${what} failed (${result}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

if(NOT BUILD_TYPE)
  set(BUILD_TYPE RelWithDebInfo)
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(configure_args
  -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  # Only the prefix below may satisfy find_package(switchboard).
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)

if(MODE STREQUAL "find_package")
  set(prefix ${WORK_DIR}/prefix)
  run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${BUILD_TYPE})

  # The package must not leak build-only helpers to its users.
  file(GLOB_RECURSE exported_files ${prefix}/*/cmake/switchboard/*.cmake)
  if(NOT exported_files)
    message(FATAL_ERROR "${MODE}: no switchboardConfig.cmake installed under ${prefix}")
  endif()
  foreach(file IN LISTS exported_files)
    file(READ ${file} content)
    foreach(forbidden valijson switchboard_warnings ${SOURCE_DIR} ${BUILD_DIR})
      string(FIND "${content}" "${forbidden}" at)
      if(NOT at EQUAL -1)
        message(FATAL_ERROR "${MODE}: installed ${file} mentions '${forbidden}'")
      endif()
    endforeach()
  endforeach()

  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_PREFIX_PATH=${prefix})
elseif(MODE STREQUAL "add_subdirectory")
  # No optimisation and no debug info compiles fastest ("None": no
  # configuration flags); only the three libraries and the consumer are built.
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=None
    -DSWITCHBOARD_SOURCE_DIR=${SOURCE_DIR}
    -DSWITCHBOARD_DEPS_DIR=${SWITCHBOARD_DEPS_DIR}
    -DSWITCHBOARD_BUILD_TESTS=OFF -DSWITCHBOARD_BUILD_BENCH=OFF
    -DSWITCHBOARD_BUILD_EXAMPLES=OFF -DSWITCHBOARD_BUILD_TOOLS=OFF)
else()
  message(FATAL_ERROR "unknown MODE '${MODE}'")
endif()

run_step("configure" ${CMAKE_COMMAND} ${configure_args})
run_step("build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build --target switchboard_consumer --parallel 2)

find_program(consumer switchboard_consumer PATHS ${WORK_DIR}/build NO_DEFAULT_PATH REQUIRED)
run_step("run" ${consumer})
if(NOT step_output MATCHES "switchboard consumer: ok")
  message(FATAL_ERROR "${MODE}: unexpected output:\n${step_output}")
endif()
message(STATUS "${MODE}: ${step_output}")
