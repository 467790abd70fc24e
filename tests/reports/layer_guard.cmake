# The layer guard of reporter/CMakeLists.txt (reporter/layer_guard/jansson.h): a source
# built with the guard's directory, as base/, model/ and cmd/ files are, fails to compile
# when it includes <jansson.h>, with the guard's message; the same source compiles without
# it (so the failure is the guard's, not the probe's). Run as cmake -P with CC, GUARD, PROBE.
execute_process(COMMAND ${CC} -fsyntax-only ${PROBE} RESULT_VARIABLE plain_rc
                ERROR_VARIABLE plain_err)
if(NOT plain_rc EQUAL 0)
  message(FATAL_ERROR "the probe does not compile without the guard: ${plain_err}")
endif()
execute_process(COMMAND ${CC} -fsyntax-only -I${GUARD} ${PROBE} RESULT_VARIABLE guarded_rc
                ERROR_VARIABLE guarded_err)
if(guarded_rc EQUAL 0)
  message(FATAL_ERROR "an #include <jansson.h> compiles with the guard's directory")
endif()
if(NOT guarded_err MATCHES "jansson is used in reporter/render/ only")
  message(FATAL_ERROR "the probe failed, but not on the guard: ${guarded_err}")
endif()
