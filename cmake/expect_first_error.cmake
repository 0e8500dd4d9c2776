# Compiles SRC and passes when the compile fails and its first "error:" line contains EXPECT.
# Usage: cmake -DCXX=... -DSRC=... -DINCLUDE=... -DEXPECT=... -P expect_first_error.cmake
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SRC}
                RESULT_VARIABLE status ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(status EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must fail with: ${EXPECT}")
endif()
string(REGEX MATCH "[^\n]*error:[^\n]*" first "${err}")
string(FIND "${first}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SRC}: the first error is\n  ${first}\nnot\n  ${EXPECT}\nFull output:\n${err}")
endif()
message(STATUS "first error, as expected: ${first}")
