# SPDX-License-Identifier: Apache-2.0
# Bounded libFuzzer run for ctest:
#   cmake -DFUZZER=<exe> -DCORPUS=<committed corpus dir> -DWORK=<scratch dir> -DSECONDS=<n>
#         -P run_fuzzer.cmake
# Replays the committed corpus, then fuzzes a scratch copy of it for SECONDS. Fails on any
# crash, leak, sanitizer report or timeout; the reproducer is left in WORK.
foreach(var FUZZER CORPUS WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT IS_DIRECTORY "${CORPUS}")
  message(FATAL_ERROR "run_fuzzer.cmake: no corpus at ${CORPUS}")
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
file(GLOB seeds "${CORPUS}/*")
list(LENGTH seeds seed_count)
if(seed_count EQUAL 0)
  message(FATAL_ERROR "run_fuzzer.cmake: the corpus ${CORPUS} is empty")
endif()
file(COPY ${seeds} DESTINATION "${WORK}/corpus")

set(ENV{ASAN_OPTIONS} "detect_leaks=1:abort_on_error=1:symbolize=1")
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
message(STATUS "fuzzing ${FUZZER} for ${SECONDS} s from ${seed_count} seeds")
execute_process(
  COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -max_len=65536
          -print_final_stats=1 -artifact_prefix=${WORK}/ "${WORK}/corpus"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB artifacts "${WORK}/crash-*" "${WORK}/leak-*" "${WORK}/timeout-*" "${WORK}/oom-*")
  message(FATAL_ERROR "fuzzer failed (exit ${rc}); reproducers: ${artifacts}")
endif()
