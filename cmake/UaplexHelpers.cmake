# SPDX-License-Identifier: Apache-2.0
# uaplex_plugin(<name> SOURCES ...): a plugin shared library, loadable by the plugin host.
# Plugins link to nothing in the kernel: only the SDK headers.
function(uaplex_plugin name)
  cmake_parse_arguments(P "" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
  add_library(${name} MODULE ${P_SOURCES})
  target_link_libraries(${name} PRIVATE uaplex_sdk ${P_LIBS})
  set_target_properties(${name} PROPERTIES PREFIX "" OUTPUT_NAME "uaplex-${name}"
    CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  # GNU unique symbols (from libstdc++ inline statics) would make dlclose a no-op, and a
  # swapped-out plugin must really unload.
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>)
  if(P_OUTPUT_DIR)
    # Built apart (test plugins): never installed.
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  elseif(CMAKE_CURRENT_SOURCE_DIR MATCHES "^${PROJECT_SOURCE_DIR}/plugins/")
    # Shipped plugins go next to each other, where the installed configuration scans.
    install(TARGETS ${name} LIBRARY DESTINATION ${UAPLEX_INSTALL_PLUGINDIR} COMPONENT runtime)
  endif()
endfunction()
