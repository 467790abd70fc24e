# Data races in the multi-threaded test programs themselves, not in the tracer: each is
# built natively with ThreadSanitizer and run untraced, with the arguments its own test
# gives it (races/check_races.py). A race there makes its test fail now and then, on a
# loaded machine, for no fault of the tracer (a global freed by several threads made
# e2e.many_threads abort about 1 run in 1000). A new multi-threaded test program goes here.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
check_c_source_compiles("int main(void) { return 0; }" MEMTRACE_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)

set(RACE_PROGS)
# race_prog(NAME SOURCE...): the program tsan_NAME, listed for the driver as NAME=PATH.
function(race_prog name)
  add_executable(tsan_${name} ${ARGN})
  target_compile_definitions(tsan_${name} PRIVATE _GNU_SOURCE)
  target_include_directories(tsan_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/e2e/progs)
  target_compile_options(tsan_${name} PRIVATE -fsanitize=thread -g -O1)
  target_link_options(tsan_${name} PRIVATE -fsanitize=thread)
  target_link_libraries(tsan_${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  set(RACE_PROGS ${RACE_PROGS} ${name}=$<TARGET_FILE:tsan_${name}> PARENT_SCOPE)
endfunction()

if(MEMTRACE_HAVE_TSAN AND NOT MEMTRACE_FUZZ)
  race_prog(many_threads tracer/many_threads.c)
  race_prog(fork_storm tracer/fork_storm.c)
  race_prog(busy_threads tracer/busy_threads.c)
  race_prog(small_stack tracer/small_stack.c)
  race_prog(thread_churn tracer/thread_churn.c)
  race_prog(vfork_first_call tracer/vfork_first_call.c)
  race_prog(getattr_first_call tracer/getattr_first_call.c)
  race_prog(e2e_threads e2e/progs/threads.c)
  race_prog(e2e_exits e2e/progs/exits.c)
  race_prog(top_prog views/top_prog.c views/top_prog_b.c)
  race_prog(e2e_stacks symbols/e2e_stacks.c)
  race_prog(runtime_leaks reports/progs/runtime_leaks.c)
  race_prog(reports_prog reports/progs/reports_prog.c)
  race_prog(temporaries reports/progs/temporaries.c)
  race_prog(mmap_fork trust/mmap_fork.c)
  race_prog(sampling_prog sampling/sampling_prog.c)
  race_prog(exit_in_dlopen symbols/exit_in_dlopen.c)
  race_prog(sleep_prog attach/sleep_prog.c)
  race_prog(leak_kinds leaks/kinds.c)
endif()
# Without ThreadSanitizer the driver gets no program and says SKIP (exit 77).
add_test(NAME unit.test_program_races
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/races/check_races.py
          ${CMAKE_CURRENT_BINARY_DIR}/races.d ${RACE_PROGS})
set_tests_properties(unit.test_program_races PROPERTIES LABELS unit TIMEOUT 300)
