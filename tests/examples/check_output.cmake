# Runs PROGRAM and passes when it exits with 0 and its standard output
# matches every regular expression in EXPECT (a ;-list).
#   cmake -D PROGRAM=<exe> -D "EXPECT=<regex>;<regex>" -P check_output.cmake
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${result}\nstdout:\n${out}\nstderr:\n${err}")
endif()
foreach(expected IN LISTS EXPECT)
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "${PROGRAM}: output does not match '${expected}':\n${out}")
  endif()
endforeach()
message(STATUS "${out}")
