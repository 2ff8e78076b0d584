# cmake --install puts headers, libraries and switchboardConfig.cmake in a
# prefix; consumers then use find_package(switchboard) and link
# switchboard::protocol, switchboard::agents, switchboard::orchestrator.
include(CMakePackageConfigHelpers)

get_property(switchboard_libraries GLOBAL PROPERTY SWITCHBOARD_LIBRARIES)
install(TARGETS ${switchboard_libraries} switchboard_warnings
        EXPORT switchboardTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(module protocol agents orchestrator)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${module}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

set(switchboard_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/switchboard)
install(EXPORT switchboardTargets NAMESPACE switchboard:: DESTINATION ${switchboard_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/switchboardConfig.cmake.in
  ${PROJECT_BINARY_DIR}/switchboardConfig.cmake INSTALL_DESTINATION ${switchboard_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/switchboardConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/switchboardConfig.cmake
              ${PROJECT_BINARY_DIR}/switchboardConfigVersion.cmake
        DESTINATION ${switchboard_cmake_dir})
