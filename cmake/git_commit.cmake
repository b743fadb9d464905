# Writes OUTPUT, a header naming the checkout's commit (and "-dirty" when it has uncommitted
# changes), only when that changes, so that only what includes it rebuilds after a commit.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -DVERSION=... -P git_commit.cmake
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" diff --quiet HEAD -- RESULT_VARIABLE dirty
                  ERROR_QUIET)
  if(NOT dirty EQUAL 0)
    string(APPEND commit "-dirty")
  endif()
endif()
set(content "#pragma once\n// Written by cmake/git_commit.cmake at build time.\n#define XLACEL_VERSION \"${VERSION}\"\n#define XLACEL_COMMIT \"${commit}\"\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
