# Compiler settings shared by every Switchboard target.
add_library(switchboard_warnings INTERFACE)
target_compile_options(switchboard_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic>
  # g++ 12 reports a false -Wmismatched-new-delete on every Asio coroutine
  # frame (operator new/delete of awaitable_frame_base; GCC PR 109224,
  # fixed in g++ 13). Silenced for that compiler only.
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-mismatched-new-delete>)

if(SWITCHBOARD_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

# switchboard_add_library(<module>): builds switchboard_<module> from
# <module>/src/*.cpp, exposes <module>/include, aliases it as
# switchboard::<module> and exports it for find_package(switchboard).
function(switchboard_add_library module)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp")
  if(NOT sources)
    message(STATUS "switchboard: ${module} has no sources yet; skipped")
    return()
  endif()
  if(SWITCHBOARD_SHARED)
    add_library(switchboard_${module} SHARED ${sources})
  else()
    add_library(switchboard_${module} STATIC ${sources})
  endif()
  add_library(switchboard::${module} ALIAS switchboard_${module})
  set_target_properties(switchboard_${module} PROPERTIES
    EXPORT_NAME ${module}
    OUTPUT_NAME switchboard_${module}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_include_directories(switchboard_${module} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(switchboard_${module} PUBLIC cxx_std_20)
  target_link_libraries(switchboard_${module} PRIVATE $<BUILD_INTERFACE:switchboard_warnings>)
  set_property(GLOBAL APPEND PROPERTY SWITCHBOARD_LIBRARIES switchboard_${module})
endfunction()
