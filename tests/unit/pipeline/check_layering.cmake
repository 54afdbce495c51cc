# SPDX-License-Identifier: Apache-2.0
# Fails when a file of kernel/pipeline names a part above it, even by a forward declaration
# (tools/check_layers.py covers the includes and links).
file(GLOB_RECURSE files ${ROOT}/*.hpp ${ROOT}/*.cpp ${ROOT}/*.h)
set(bad "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "uaplex::(server|services|subscription|addressspace)")
  foreach(l ${lines})
    list(APPEND bad "${f}: ${l}")
  endforeach()
endforeach()
if(bad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "the pipeline names a part above it:\n${bad}")
endif()
