# SPDX-License-Identifier: Apache-2.0
# `cmake --install` / `make install` and CPack: the server, the shipped plugins (installed by
# uaplex_plugin()), the SDK headers with a CMake package (find_package(uaplex) ->
# uaplex::sdk, uaplex_plugin()), and the default configuration pointing at the installed
# plugin directory. `cpack -G DEB` builds a Debian package of the same tree.
include(CMakePackageConfigHelpers)

file(STRINGS ${PROJECT_SOURCE_DIR}/sdk/include/uaplex/abi.h abi_lines
     REGEX "#define UAPLEX_ABI_VERSION_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+)u.*" "\\1" UAPLEX_ABI_MAJOR "${abi_lines}")
string(REGEX REPLACE ".*MINOR ([0-9]+)u.*" "\\1" UAPLEX_ABI_MINOR "${abi_lines}")

install(TARGETS uaplex RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# The embedded default configuration, with the plugin directory of the installed tree.
file(READ ${PROJECT_SOURCE_DIR}/etc/uaplex.toml default_toml)
string(REPLACE "# The build puts plugins next to bin/: build/<type>/plugins.\nplugin_dirs = [\"{exe_dir}/../plugins\"]"
       "# The installed tree: <prefix>/${UAPLEX_INSTALL_PLUGINDIR}.\nplugin_dirs = [\"{exe_dir}/../${UAPLEX_INSTALL_PLUGINDIR}\"]"
       installed_toml "${default_toml}")
if(installed_toml STREQUAL default_toml)
  message(FATAL_ERROR "etc/uaplex.toml: plugin_dirs line not found for the installed configuration")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/install/uaplex.toml "${installed_toml}")
install(FILES ${CMAKE_BINARY_DIR}/install/uaplex.toml
        DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/uaplex COMPONENT runtime)
# The Grafana dashboard of the metrics (docs/metrics.md).
install(FILES ${PROJECT_SOURCE_DIR}/etc/grafana/uaplex-dashboard.json
        DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/uaplex/grafana COMPONENT runtime)
# Companion specifications for the nodeset plugin ([plugins.nodeset] files).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schema/companion/ DESTINATION ${CMAKE_INSTALL_DATADIR}/uaplex/nodesets
        COMPONENT runtime FILES_MATCHING PATTERN "*.xml")
install(FILES ${PROJECT_SOURCE_DIR}/docs/plugin-guide.md ${PROJECT_SOURCE_DIR}/docs/configuration.md
              ${PROJECT_SOURCE_DIR}/docs/operations.md ${PROJECT_SOURCE_DIR}/docs/metrics.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT sdk OPTIONAL)

set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/uaplex)
install(EXPORT uaplexTargets NAMESPACE uaplex:: DESTINATION ${cmake_dir} COMPONENT sdk)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/package/uaplexConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/uaplexConfig.cmake INSTALL_DESTINATION ${cmake_dir}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR UAPLEX_INSTALL_PLUGINDIR)
# A plugin is compatible with hosts of the same ABI major; the package version follows the
# project, SameMajorVersion mirrors that rule for find_package(uaplex 0.1).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/uaplexConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/uaplexConfig.cmake
              ${CMAKE_BINARY_DIR}/install/uaplexConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/package/uaplexPlugin.cmake
        DESTINATION ${cmake_dir} COMPONENT sdk)

# Debian package: one self-contained tree under /opt/uaplex.
set(CPACK_PACKAGE_NAME uaplex)
set(CPACK_PACKAGE_VENDOR "uaplex")
set(CPACK_PACKAGE_CONTACT "uaplex maintainers <uaplex@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OPC UA server framework: kernel, plugins and plugin SDK")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /opt/uaplex)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libssl3, libspdlog1.10, libfmt9, libtomlplusplus3, libsqlite3-0, libpq5")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_GENERATOR DEB)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/package)
include(CPack)
