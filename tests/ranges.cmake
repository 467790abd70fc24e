# Time ranges: --at and --range given as times or as the names of the marks and ranges a
# traced program recorded (ranges/ranges_prog.c), on every report that takes them.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(ranges_prog ranges/ranges_prog.c)
  target_include_directories(ranges_prog PRIVATE ${PROJECT_SOURCE_DIR}/preload/include)
  target_compile_options(ranges_prog PRIVATE -g -O0 -fno-inline -fno-omit-frame-pointer)
  target_link_libraries(ranges_prog PRIVATE memtrace_warnings)
  add_test(NAME e2e.ranges
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/ranges/ranges_test.py
      $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:ranges_prog>
      ${CMAKE_CURRENT_BINARY_DIR}/ranges.d ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu/corner.log)
  set_tests_properties(e2e.ranges PROPERTIES LABELS e2e TIMEOUT 120)
endif()
