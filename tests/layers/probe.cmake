# SPDX-License-Identifier: Apache-2.0
# Builds OWNER (HEADER against the target of its own layer: must compile) and LOWER (the
# same file against a lower layer: must fail, on the include of HEADER and nothing else).
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${OWNER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the probe does not compile against the layer that owns ${HEADER}:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${LOWER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} compiled against a lower layer's include path")
endif()
string(REPLACE "." "\\." pattern "${HEADER}")
if(NOT out MATCHES "${pattern}: No such file or directory")
  message(FATAL_ERROR "the upward probe failed for another reason than ${HEADER}:\n${out}")
endif()
message(STATUS "${HEADER} is out of the lower layer's reach")
