# cmake --install puts headers, libraries and switchboardConfig.cmake in a
# prefix; consumers then use find_package(switchboard) and link
# switchboard::protocol, switchboard::agents, switchboard::orchestrator,
# switchboard::host.
# tests/install proves it (and add_subdirectory) with a consumer project.
include(CMakePackageConfigHelpers)

get_property(switchboard_libraries GLOBAL PROPERTY SWITCHBOARD_LIBRARIES)

# Installed libraries find each other (and the installed tool finds them)
# wherever the prefix is, without LD_LIBRARY_PATH.
set_target_properties(${switchboard_libraries} PROPERTIES INSTALL_RPATH "$ORIGIN")
if(TARGET switchboard_cli)
  set_target_properties(switchboard_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

# switchboard_warnings is not installed: the libraries use it only as
# $<BUILD_INTERFACE:...>, and consumers choose their own warnings.
install(TARGETS ${switchboard_libraries}
        EXPORT switchboardTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(module protocol net telemetry models agents mcp a2a orchestrator host)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${module}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

set(switchboard_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/switchboard)
install(EXPORT switchboardTargets NAMESPACE switchboard:: DESTINATION ${switchboard_cmake_dir})
# Static libraries need their private dependencies at the consumer's link
# step; shared ones do not (switchboardConfig.cmake.in reads this).
set(SWITCHBOARD_INSTALLED_SHARED ${SWITCHBOARD_SHARED})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/switchboardConfig.cmake.in
  ${PROJECT_BINARY_DIR}/switchboardConfig.cmake INSTALL_DESTINATION ${switchboard_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/switchboardConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/switchboardConfig.cmake
              ${PROJECT_BINARY_DIR}/switchboardConfigVersion.cmake
        DESTINATION ${switchboard_cmake_dir})
