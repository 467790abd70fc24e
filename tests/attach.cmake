# memtrace --pid / --detach: attaching to a running program through gdb (attach/attach_prog.c
# waits on the test between phases; attach_test.py checks the capture against what the
# program did after the attach, and its output and status against an untraced run).
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(attach_prog attach/attach_prog.c)
  target_compile_options(attach_prog PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  add_library(attach_lib SHARED attach/attach_lib.c)
  target_compile_options(attach_lib PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  memtrace_driver_cases(ATTACH_CASES ${CMAKE_CURRENT_SOURCE_DIR}/attach/attach_test.py)
  foreach(case ${ATTACH_CASES})
    add_test(NAME e2e.attach_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/attach/attach_test.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:attach_prog>
              $<TARGET_FILE:attach_lib> ${CMAKE_CURRENT_BINARY_DIR}/attach-e2e ${case})
    set_tests_properties(e2e.attach_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
  # memtrace --pid passes the launcher's MEMTRACE_* settings (attach/attach_settings_test.py).
  add_executable(attach_settings_prog attach/attach_settings_prog.c)
  target_compile_options(attach_settings_prog PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  memtrace_driver_cases(ATTACH_SETTINGS_CASES
    ${CMAKE_CURRENT_SOURCE_DIR}/attach/attach_settings_test.py)
  foreach(case ${ATTACH_SETTINGS_CASES})
    add_test(NAME e2e.attach_settings_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/attach/attach_settings_test.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              $<TARGET_FILE:attach_settings_prog> ${CMAKE_CURRENT_BINARY_DIR}/attach-e2e ${case})
    set_tests_properties(e2e.attach_settings_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()
# memtrace --pid on a running python3 wraps CPython's allocators as a start does
# (attach/python_attach_test.py: the objects made after the attach in the python heap).
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  memtrace_driver_cases(PYTHON_ATTACH_CASES ${CMAKE_CURRENT_SOURCE_DIR}/attach/python_attach_test.py)
  foreach(case ${PYTHON_ATTACH_CASES})
    add_test(NAME e2e.attach_python_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/attach/python_attach_test.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              ${CMAKE_CURRENT_BINARY_DIR}/attach-python ${case})
    set_tests_properties(e2e.attach_python_${case} PROPERTIES LABELS e2e TIMEOUT 300
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
# The set of sampled blocks across the captures of one process: a second attach after a
# detach, a forked child (attach/sample_set_test.py, attach/sample_set_prog.c).
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(sample_set_prog attach/sample_set_prog.c)
  target_compile_options(sample_set_prog PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  memtrace_driver_cases(SAMPLE_SET_CASES ${CMAKE_CURRENT_SOURCE_DIR}/attach/sample_set_test.py)
  foreach(case ${SAMPLE_SET_CASES})
    add_test(NAME e2e.attach_sample_set_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/attach/sample_set_test.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              $<TARGET_FILE:sample_set_prog> ${CMAKE_CURRENT_BINARY_DIR}/attach-e2e ${case})
    set_tests_properties(e2e.attach_sample_set_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()

# mt_sampling_forget, which empties the set at such an attach (as unit.sampling: the base and
# core objects, no shim).
add_executable(test_sampling_forget unit/test_sampling_forget.c ${MEMTRACE_PRELOAD_OBJECTS})
target_include_directories(test_sampling_forget PRIVATE ${MEMTRACE_PRELOAD_INCLUDES})
target_compile_definitions(test_sampling_forget PRIVATE _GNU_SOURCE)
target_compile_options(test_sampling_forget PRIVATE -ftls-model=initial-exec
                       -fno-omit-frame-pointer)
target_link_libraries(test_sampling_forget PRIVATE memtrace_common_nosan memtrace_warnings
                      PkgConfig::SQLITE3 PkgConfig::LIBUNWIND PkgConfig::LIBDW Threads::Threads
                      ${CMAKE_DL_LIBS} m)
add_test(NAME unit.sampling_forget COMMAND test_sampling_forget)
set_tests_properties(unit.sampling_forget PROPERTIES LABELS unit TIMEOUT 120)

# An attach and a detach leave a sleep in the program's main thread as long as it was asked
# (attach/sleep_test.py, attach/sleep_prog.c).
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(sleep_prog attach/sleep_prog.c)
  target_compile_definitions(sleep_prog PRIVATE _GNU_SOURCE)
  target_compile_options(sleep_prog PRIVATE -O1 -g)
  target_link_libraries(sleep_prog PRIVATE memtrace_warnings Threads::Threads)
  add_test(NAME e2e.attach_sleep
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/attach/sleep_test.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:sleep_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/attach_sleep.d)
  set_tests_properties(e2e.attach_sleep PROPERTIES LABELS e2e TIMEOUT 300)
endif()
