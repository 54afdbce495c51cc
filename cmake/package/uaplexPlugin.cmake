# SPDX-License-Identifier: Apache-2.0
# uaplex_plugin(<name> SOURCES ... [LIBS ...] [OUTPUT_DIR dir]) for plugins built against an
# installed SDK: the same rules as inside the uaplex tree (hidden visibility, no GNU unique
# symbols, the uaplex-<name>.so file name the host scans for).
if(NOT COMMAND uaplex_plugin)
  function(uaplex_plugin name)
    cmake_parse_arguments(P "" "OUTPUT_DIR" "SOURCES;LIBS" ${ARGN})
    add_library(${name} MODULE ${P_SOURCES})
    target_link_libraries(${name} PRIVATE uaplex::sdk ${P_LIBS})
    set_target_properties(${name} PROPERTIES PREFIX "" OUTPUT_NAME "uaplex-${name}"
      CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
    # GNU unique symbols would make dlclose a no-op, so a reloaded plugin would not unload.
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-gnu-unique>)
    target_compile_features(${name} PRIVATE cxx_std_20)
    if(P_OUTPUT_DIR)
      set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
    endif()
  endfunction()
endif()
