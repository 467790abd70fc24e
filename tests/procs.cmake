# Process trees: memtrace -o DIR/ writes one capture per process, and memreport reads a
# directory or several captures as one run (tests/procs/procs_test.py: known truth from the
# e2e programs of capture.cmake; the trust rules of the directory).
# The processes on one time axis, their sum's exact peak (reporter/model/procs_timeline.h).
memtrace_unit_test(procs_timeline ${REPORTS_FIXTURE})
# What a legend calls each process: the arguments that tell it apart (render/procs_report.h).
memtrace_unit_test(procs_names)
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_test(NAME e2e.procs_tree
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py tree
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:e2e_leaks> $<TARGET_FILE:e2e_peak> $<TARGET_FILE:e2e_realloc_chain>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_tree.d)
  add_test(NAME e2e.procs_reports
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py reports
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:e2e_leaks> $<TARGET_FILE:e2e_peak> $<TARGET_FILE:e2e_realloc_chain>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_reports.d)
  add_test(NAME e2e.procs_plot
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py plot
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:e2e_leaks> $<TARGET_FILE:e2e_peak> $<TARGET_FILE:e2e_realloc_chain>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_plot.d)
  add_test(NAME e2e.procs_diff
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py diff
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:diff_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_diff.d)
  add_test(NAME e2e.procs_trust
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py trust
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memtrace> $<TARGET_FILE:e2e_leaks>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_trust.d)
  # stats, export, flow and sql of DIR: each process's numbers its summary's, under it.
  add_test(NAME e2e.procs_views
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py views
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:e2e_leaks> $<TARGET_FILE:e2e_peak> $<TARGET_FILE:e2e_realloc_chain>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_views.d)
  # A parent and child whose heaps overlap (procs/joint_peak.c): summary, flamegraph and
  # export, top and stats of DIR headline the most they held at one moment, and name the
  # sum of peaks so (summary, stats, diff).
  add_executable(joint_peak procs/joint_peak.c)
  target_link_libraries(joint_peak PRIVATE memtrace_warnings)
  add_test(NAME e2e.procs_joint_peak
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/procs_test.py joint
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:joint_peak>
            ${CMAKE_CURRENT_BINARY_DIR}/procs_joint.d)
  # memreport view DIR in headless chromium: the processes and their joint peak as summary's
  # (tests/procs/view_tree.py).
  add_test(NAME e2e.view_procs
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/view_tree.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:joint_peak>
            ${CMAKE_CURRENT_BINARY_DIR}/view_procs.d)
  set_tests_properties(e2e.view_procs PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77)
  # memreport view's looks, light and dark, on one capture and on a tree of ten processes
  # with long command lines: text contrast, a dozen distinct series colours, names cut with
  # their title, the keyboard (tests/procs/view_looks.py).
  add_executable(spawn_all procs/spawn_all.c)
  target_link_libraries(spawn_all PRIVATE memtrace_warnings)
  add_test(NAME e2e.view_looks
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/view_looks.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:spawn_all>
            $<TARGET_FILE:e2e_peak> $<TARGET_FILE:reports_fixture>
            ${CMAKE_CURRENT_BINARY_DIR}/view_looks.d)
  set_tests_properties(e2e.view_looks PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
  # memreport plot's series colours read back from its PNGs: a tree of twelve processes and
  # --sites 10, each series at least 20 apart from the others (tests/procs/plot_colours.py).
  add_test(NAME e2e.plot_colours
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/procs/plot_colours.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:spawn_all>
            $<TARGET_FILE:e2e_peak> $<TARGET_FILE:reports_deep_fixture>
            ${CMAKE_CURRENT_BINARY_DIR}/plot_colours.d)
  set_tests_properties(e2e.plot_colours PROPERTIES LABELS e2e TIMEOUT 120)
  # memreport view of the program with hostile names and hostile arguments, alone and as a
  # tree, in headless chromium: every name as text, nothing runs (tests/reports/view_hostile.py).
  add_test(NAME e2e.view_hostile_names
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/reports/view_hostile.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:hostile_names> $<TARGET_FILE:spawn_all>
            ${CMAKE_CURRENT_BINARY_DIR}/view_hostile.d)
  set_tests_properties(e2e.view_hostile_names PROPERTIES LABELS e2e TIMEOUT 180
                       SKIP_RETURN_CODE 77)
  set_tests_properties(e2e.procs_joint_peak e2e.procs_tree e2e.procs_reports e2e.procs_plot e2e.procs_diff e2e.procs_trust e2e.procs_views PROPERTIES LABELS e2e TIMEOUT 180)
endif()
