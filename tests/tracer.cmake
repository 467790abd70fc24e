# Tracer tests: MEMTRACE_UNWIND=auto must give exactly libunwind's stacks, on code built
# with and without frame pointers (libstdc++ and libc have none on Debian).
if(TARGET memtrace AND TARGET memtrace_launcher)
  enable_language(CXX)
  foreach(variant fp nofp)
    add_executable(unwind_paths_${variant} tracer/unwind_paths.cpp)
    if(variant STREQUAL "fp")
      target_compile_options(unwind_paths_${variant} PRIVATE -O2 -g -fno-omit-frame-pointer)
    else()
      target_compile_options(unwind_paths_${variant} PRIVATE -O2 -g -fomit-frame-pointer)
    endif()
    add_test(NAME e2e.unwind_auto_equals_libunwind_${variant}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tracer/compare_unwinders.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              $<TARGET_FILE:unwind_paths_${variant}>)
    set_tests_properties(e2e.unwind_auto_equals_libunwind_${variant} PROPERTIES
      LABELS e2e TIMEOUT 300)
  endforeach()
endif()
