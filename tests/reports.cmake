# Report tests (memreport leaks, stats, flamegraph): unit tests run the subcommands in
# process on fixture captures with known truth (tests/reports/fixture.c); the browser test
# drives headless chromium over WebDriver.
set(REPORTS_FIXTURE ${CMAKE_CURRENT_SOURCE_DIR}/reports/fixture.c)
memtrace_unit_test(sites ${REPORTS_FIXTURE})
memtrace_unit_test(leaks ${REPORTS_FIXTURE})
memtrace_unit_test(stats ${REPORTS_FIXTURE})
memtrace_unit_test(stats_sampled ${REPORTS_FIXTURE})
memtrace_unit_test(flamegraph ${REPORTS_FIXTURE})
# The aggregation model every view reads (reporter/model/profile.h).
memtrace_unit_test(profile ${REPORTS_FIXTURE})
# The aggregates stored in a capture against the replay they stand for.
memtrace_unit_test(aggregates ${REPORTS_FIXTURE})
# Its function view: self and total per function (reporter/model/functions.h).
memtrace_unit_test(functions ${REPORTS_FIXTURE})
# Live bytes per callsite at each time bucket's highest moment (reporter/model/moments.h).
memtrace_unit_test(moments ${REPORTS_FIXTURE})

add_executable(reports_fixture reports/mkfixture.c ${REPORTS_FIXTURE})
target_link_libraries(reports_fixture PRIVATE memtrace_common memtrace_warnings PkgConfig::SQLITE3)
target_compile_definitions(reports_fixture PRIVATE _GNU_SOURCE)

# A capture 152 frames deep (tests/reports/mkdeep.c), for the flame graph's orientation.
add_executable(reports_deep_fixture reports/mkdeep.c ${REPORTS_FIXTURE})
target_link_libraries(reports_deep_fixture PRIVATE memtrace_common memtrace_warnings
                      PkgConfig::SQLITE3)
target_compile_definitions(reports_deep_fixture PRIVATE _GNU_SOURCE)

add_test(NAME e2e.flamegraph_browser
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/browser_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          $<TARGET_FILE:reports_deep_fixture> ${CMAKE_CURRENT_BINARY_DIR}/reports-browser)
set_tests_properties(e2e.flamegraph_browser PROPERTIES LABELS e2e TIMEOUT 180
                     SKIP_RETURN_CODE 77)

# Reports on a real traced program (needs the tracer from preload/).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(reports_prog reports/progs/reports_prog.c)
  target_link_libraries(reports_prog PRIVATE Threads::Threads)
  target_compile_definitions(reports_prog PRIVATE _GNU_SOURCE)
  target_compile_options(reports_prog PRIVATE -g -O1 -fno-omit-frame-pointer)
  add_test(NAME e2e.reports_traced
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/e2e_test.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:reports_prog> ${CMAKE_CURRENT_BINARY_DIR}/reports-e2e)
  set_tests_properties(e2e.reports_traced PROPERTIES LABELS e2e TIMEOUT 120)
endif()

# Names, files, argv that are invalid UTF-8 or hold terminal escapes and HTML, in every
# report (reporter/escape.h).
memtrace_unit_test(escape ${REPORTS_FIXTURE})
memtrace_unit_test(reports_empty ${REPORTS_FIXTURE})
# Messages from two threads at once (diff reads its captures on two) stay whole lines.
memtrace_unit_test(messages)
# JSON is built in reporter/render/ only: the other layers' guard makes <jansson.h> fail.
add_test(NAME unit.layer_guard
         COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER}
                 -DGUARD=${PROJECT_SOURCE_DIR}/reporter/layer_guard
                 -DPROBE=${CMAKE_CURRENT_SOURCE_DIR}/reports/jansson_probe.c
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/reports/layer_guard.cmake)
set_tests_properties(unit.layer_guard PROPERTIES LABELS unit TIMEOUT 60)
# ... and every file of cmd/ and npu/ compiles under that guard (none uses jansson itself).
foreach(layer cmd npu)
  add_test(NAME unit.${layer}_no_json
           COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER}
                   -DGUARD=${PROJECT_SOURCE_DIR}/reporter/layer_guard
                   -DDIR=${PROJECT_SOURCE_DIR}/reporter/${layer}
                   "-DINCLUDES=$<JOIN:$<TARGET_PROPERTY:memreport_${layer},INCLUDE_DIRECTORIES>,|>"
                   "-DDEFINES=$<JOIN:$<TARGET_PROPERTY:memreport_${layer},COMPILE_DEFINITIONS>,|>"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/reports/layer_no_json.cmake)
  set_tests_properties(unit.${layer}_no_json PROPERTIES LABELS unit TIMEOUT 120)
endforeach()

# Every report on a real traced program with hostile names (needs the tracer). Its
# functions are named by __asm__ labels, which only the ELF symbols carry: no -g there.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(hostile_names reports/progs/hostile_names.c reports/progs/hostile_file.c)
  target_compile_definitions(hostile_names PRIVATE _GNU_SOURCE)
  target_compile_options(hostile_names PRIVATE -g0 -O1 -fno-omit-frame-pointer)
  set_source_files_properties(reports/progs/hostile_file.c PROPERTIES COMPILE_OPTIONS -g)
  target_link_libraries(hostile_names PRIVATE Threads::Threads)
  add_test(NAME e2e.reports_hostile_names
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/e2e_hostile.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:hostile_names> ${CMAKE_CURRENT_BINARY_DIR}/reports-hostile)
  set_tests_properties(e2e.reports_hostile_names PROPERTIES LABELS e2e TIMEOUT 120)
endif()

# Units and times of every report: sizes in KiB/MiB/GiB (common/units.c), the one --at
# parser and a capture's extent in time (reporter/util.c), on native and imported NPU captures.
memtrace_unit_test(units ${REPORTS_FIXTURE})
target_compile_definitions(test_units PRIVATE
  NPU_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu")

# Temporary allocations counted as heaptrack counts them, checked against Debian's heaptrack
# on a program with known temporaries (skipped when heaptrack is not installed).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(temporaries_prog reports/progs/temporaries.c)
  target_link_libraries(temporaries_prog PRIVATE Threads::Threads)
  target_compile_options(temporaries_prog PRIVATE -g -O1 -fno-omit-frame-pointer)
  add_test(NAME e2e.stats_temporary_heaptrack
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/e2e_temporaries.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:temporaries_prog> ${CMAKE_CURRENT_BINARY_DIR}/reports-temporaries)
  set_tests_properties(e2e.stats_temporary_heaptrack PROPERTIES LABELS e2e TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endif()

# leaks and summary on a real program: its own leaks apart from what the C runtime holds
# (stdout's buffer, a thread's DTV); LeakSanitizer suppressions (needs the tracer).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(runtime_leaks reports/progs/runtime_leaks.c)
  target_link_libraries(runtime_leaks PRIVATE Threads::Threads)
  target_compile_options(runtime_leaks PRIVATE -g -O1 -fno-omit-frame-pointer)
  add_test(NAME e2e.leaks_runtime_held
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/e2e_runtime.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:runtime_leaks> ${CMAKE_CURRENT_BINARY_DIR}/reports-runtime)
  set_tests_properties(e2e.leaks_runtime_held PROPERTIES LABELS e2e TIMEOUT 120)
endif()

# Site labels past an xmalloc wrapper in stats and plot --sites (needs the tracer).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(xmalloc_sites reports/progs/xmalloc_sites.c)
  target_compile_options(xmalloc_sites PRIVATE -g -O1 -fno-omit-frame-pointer)
  add_test(NAME e2e.sites_wrappers
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/e2e_sites.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:xmalloc_sites> ${CMAKE_CURRENT_BINARY_DIR}/reports-sites)
  set_tests_properties(e2e.sites_wrappers PROPERTIES LABELS e2e TIMEOUT 120)
endif()

# The flame graph page's views in headless chromium: inverted (bottom-up), the function
# table and its sandwich, orientation, on a capture with known truth (tests/reports/mkphases.c).
add_executable(reports_phases_fixture reports/mkphases.c ${REPORTS_FIXTURE})
target_link_libraries(reports_phases_fixture PRIVATE memtrace_common memtrace_warnings
                      PkgConfig::SQLITE3)
target_compile_definitions(reports_phases_fixture PRIVATE _GNU_SOURCE)
add_test(NAME e2e.flamegraph_views
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/page_views_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_phases_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/reports-views)
set_tests_properties(e2e.flamegraph_views PROPERTIES LABELS e2e TIMEOUT 180
                     SKIP_RETURN_CODE 77)

# memreport view in headless chromium: a click and a drag on the timeline checked against
# memreport top --at and --range, the link, the keys, the layout, hostile names.
add_test(NAME e2e.view_browser
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/view_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/reports-view)
set_tests_properties(e2e.view_browser PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77)

# A function name of over 3,000 characters: whole in every text view that prints whole
# names and in JSON, cut visibly where a view cuts by design (tests/reports/long_names_test.py).
add_test(NAME e2e.long_names
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/long_names_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/reports-long-names)
set_tests_properties(e2e.long_names PROPERTIES LABELS e2e TIMEOUT 120)
