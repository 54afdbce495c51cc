# SPDX-License-Identifier: Apache-2.0
# cmake -DHEADER=sdk/include/uaplex/abi.h -DDOC=docs/plugin-guide.md -P abi_version_doc.cmake
# The plugin guide names the ABI version that abi.h defines, so a minor bump that forgets the
# guide fails here instead of misleading plugin authors.
file(READ "${HEADER}" header)
string(REGEX MATCH "#define UAPLEX_ABI_VERSION_MAJOR ([0-9]+)u" _ "${header}")
set(major "${CMAKE_MATCH_1}")
string(REGEX MATCH "#define UAPLEX_ABI_VERSION_MINOR ([0-9]+)u" _ "${header}")
set(minor "${CMAKE_MATCH_1}")
if(major STREQUAL "" OR minor STREQUAL "")
  message(FATAL_ERROR "${HEADER}: UAPLEX_ABI_VERSION_MAJOR/MINOR not found")
endif()
file(READ "${DOC}" doc)
string(FIND "${doc}" "(currently ${major}.${minor})" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} does not say \"(currently ${major}.${minor})\", "
                      "the ABI version of ${HEADER}")
endif()
message(STATUS "ABI ${major}.${minor}: documented in ${DOC}")
