# libFuzzer targets (MEMTRACE_FUZZ=ON, clang only, a build directory of its own: `make fuzz`).
# common/ and reporter/ are then built with -fsanitize=fuzzer-no-link,address,undefined
# (the top-level CMakeLists.txt sets MEMTRACE_SANITIZE), so the fuzzer sees their coverage;
# each target links libFuzzer's main. Seeds are in fuzz/corpus/<target>, inputs that once
# crashed in fuzz/crashes/<target>: `ctest -L fuzz` replays both, once.
if(NOT MEMTRACE_FUZZ)
  return()
endif()

set(MEMTRACE_FUZZ_TARGETS codec capture npu)
foreach(target ${MEMTRACE_FUZZ_TARGETS})
  # tmpdir.c: the tests' one temporary directory (tmpdir.h), for a target that writes files.
  add_executable(fuzz_${target} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${target}.c
                 ${CMAKE_CURRENT_SOURCE_DIR}/tmpdir.c)
  target_link_libraries(fuzz_${target} PRIVATE memreport_lib memtrace_common memtrace_warnings)
  target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
  set(dirs ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${target})
  if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/crashes/${target})
    list(APPEND dirs ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/crashes/${target})
  endif()
  # -runs=0: run every input of the directories once, fuzz nothing.
  add_test(NAME fuzz.${target} COMMAND fuzz_${target} -runs=0 ${dirs})
  set_tests_properties(fuzz.${target} PROPERTIES LABELS fuzz TIMEOUT 300 ENVIRONMENT
    "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/lsan.supp:print_suppressions=0;UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
endforeach()

