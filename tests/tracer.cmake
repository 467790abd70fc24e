# Tracer tests: unit tests of the preload modules linked without the shim (tests/unit:
# the callsite trie, the clock mapping, the event order's counter, the core's event path),
# and traced programs:
# MEMTRACE_UNWIND=auto must give exactly libunwind's stacks, on code built with and without
# frame pointers (libstdc++ and libc have none on Debian).

# The preload base objects alone (the core with its writer and SQLite is test_core's); no
# shim, so the test's own malloc is not interposed.
foreach(module trie clock seq)
  add_executable(test_${module} unit/test_${module}.c $<TARGET_OBJECTS:memtrace_preload_base>)
  target_include_directories(test_${module} PRIVATE ${MEMTRACE_PRELOAD_INCLUDES})
  target_compile_definitions(test_${module} PRIVATE _GNU_SOURCE)
  target_compile_options(test_${module} PRIVATE -ftls-model=initial-exec)
  target_link_libraries(test_${module} PRIVATE memtrace_common_nosan memtrace_warnings
                        Threads::Threads ${CMAKE_DL_LIBS})
  add_test(NAME unit.${module} COMMAND test_${module})
  set_tests_properties(unit.${module} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()

# The core's event path: the base and core objects without the shim or the constructor that
# starts tracing at load (autostart.c); the test starts the core itself. Unsanitized, like
# the tracer (it links the tracer's own common library).
add_executable(test_core unit/test_core.c tmpdir.c ${MEMTRACE_PRELOAD_OBJECTS})
target_include_directories(test_core PRIVATE ${MEMTRACE_PRELOAD_INCLUDES})
target_compile_definitions(test_core PRIVATE _GNU_SOURCE)
target_compile_options(test_core PRIVATE -ftls-model=initial-exec -fno-omit-frame-pointer)
target_link_libraries(test_core PRIVATE memtrace_common_nosan memtrace_warnings PkgConfig::SQLITE3
                      PkgConfig::LIBUNWIND PkgConfig::LIBDW Threads::Threads ${CMAKE_DL_LIBS} m)
add_test(NAME unit.core COMMAND test_core)
set_tests_properties(unit.core PROPERTIES LABELS unit TIMEOUT 120)

# The auto unwinder's caches against libunwind on random stacks made by a library of their
# own (no frame pointers).
add_library(unwind_cache_lib SHARED unit/unwind_cache_lib.c)
target_compile_options(unwind_cache_lib PRIVATE -O2 -fomit-frame-pointer)
add_executable(test_unwind_cache unit/test_unwind_cache.c ${MEMTRACE_PRELOAD_OBJECTS})
target_include_directories(test_unwind_cache PRIVATE ${MEMTRACE_PRELOAD_INCLUDES})
target_compile_definitions(test_unwind_cache PRIVATE _GNU_SOURCE)
target_compile_options(test_unwind_cache PRIVATE -ftls-model=initial-exec -fno-omit-frame-pointer)
target_link_libraries(test_unwind_cache PRIVATE unwind_cache_lib memtrace_common_nosan
                      memtrace_warnings PkgConfig::SQLITE3 PkgConfig::LIBUNWIND PkgConfig::LIBDW
                      Threads::Threads ${CMAKE_DL_LIBS} m)
add_test(NAME unit.unwind_cache COMMAND test_unwind_cache)
set_tests_properties(unit.unwind_cache PROPERTIES LABELS unit TIMEOUT 120)

# The tracer's floors call only downwards (docs/architecture.md): nm on each floor's objects.
set(floor_args)
foreach(floor hooks life writer record base settings say)
  list(APPEND floor_args "${floor}=$<TARGET_OBJECTS:memtrace_preload_${floor}>")
endforeach()
add_test(NAME unit.preload_floors
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_floors.py ${CMAKE_NM}
          ${floor_args})
set_tests_properties(unit.preload_floors PROPERTIES LABELS unit TIMEOUT 120 SKIP_RETURN_CODE 77)

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
    # Stacks deeper than the limit: auto keeps and joins them past it, and reports the cut.
    add_test(NAME e2e.unwind_auto_equals_libunwind_${variant}_depth12
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tracer/compare_unwinders.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              $<TARGET_FILE:unwind_paths_${variant}> 12)
    set_tests_properties(e2e.unwind_auto_equals_libunwind_${variant}_depth12 PROPERTIES
      LABELS e2e TIMEOUT 300)
  endforeach()
endif()

# The annotation API (memtrace.h) with and without the tracer.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(annotations tracer/annotations.c)
  target_include_directories(annotations PRIVATE ${PROJECT_SOURCE_DIR}/preload/include)
  target_link_libraries(annotations PRIVATE memtrace_warnings)
  add_test(NAME e2e.annotations COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_annotations.sh
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:annotations>
    ${CMAKE_CURRENT_BINARY_DIR}/annotations.d)
  set_tests_properties(e2e.annotations PROPERTIES LABELS e2e TIMEOUT 120)
  # A pool annotated inside a malloc'ed arena: exact peak, blocks apart, the pool's site.
  add_executable(pool_arena tracer/pool_arena.c)
  target_include_directories(pool_arena PRIVATE ${PROJECT_SOURCE_DIR}/preload/include)
  target_compile_options(pool_arena PRIVATE -O0 -g)
  target_link_libraries(pool_arena PRIVATE memtrace_warnings)
  add_test(NAME e2e.annotations_pool COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_pool.py $<TARGET_FILE:memtrace_launcher>
    $<TARGET_FILE:memreport> $<TARGET_FILE:pool_arena> ${CMAKE_CURRENT_BINARY_DIR}/pool.d)
  set_tests_properties(e2e.annotations_pool PROPERTIES LABELS e2e TIMEOUT 120)

  # libmemtrace.so exports exactly the hooks of preload/hooks.def and memtrace_*.
  add_test(NAME unit.exports
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_exports.py ${CMAKE_NM}
            $<TARGET_FILE:memtrace> ${PROJECT_SOURCE_DIR}/preload/hooks.def)
  set_tests_properties(unit.exports PROPERTIES LABELS unit TIMEOUT 30)
endif()

# An exec'd child never writes into the capture its still-running parent is writing.
if(TARGET memtrace)
  add_test(NAME e2e.exec_output COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_exec_output.sh
    $<TARGET_FILE:memtrace> $<TARGET_FILE:memreport> ${CMAKE_CURRENT_BINARY_DIR}/exec_output.d)
  set_tests_properties(e2e.exec_output PROPERTIES LABELS e2e TIMEOUT 120)
endif()

# fork while other threads (the program's and the writer) hold locks.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(fork_storm tracer/fork_storm.c)
  target_link_libraries(fork_storm PRIVATE memtrace_warnings Threads::Threads)
  target_compile_definitions(fork_storm PRIVATE _GNU_SOURCE)
  add_test(NAME e2e.fork_storm COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_fork_storm.sh
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:fork_storm>
    ${CMAKE_CURRENT_BINARY_DIR}/fork_storm.d)
  set_tests_properties(e2e.fork_storm PROPERTIES LABELS e2e TIMEOUT 180)
endif()

# Threads allocating without pause on one CPU: the writer still commits every period, and
# forks never wait for its queue to empty.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(busy_threads tracer/busy_threads.c)
  target_link_libraries(busy_threads PRIVATE memtrace_warnings Threads::Threads)
  target_compile_definitions(busy_threads PRIVATE _GNU_SOURCE)
  foreach(mode kill fork)
    add_test(NAME e2e.busy_${mode} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_busy_threads.py ${mode}
      $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:busy_threads>
      ${CMAKE_CURRENT_BINARY_DIR}/busy_${mode}.d)
    set_tests_properties(e2e.busy_${mode} PROPERTIES LABELS e2e TIMEOUT 180)
  endforeach()
endif()

# A program killed while it waits: its exit watcher finishes the capture, exact.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(killed tracer/killed.c)
  target_link_libraries(killed PRIVATE memtrace_warnings)
  target_compile_options(killed PRIVATE -O0 -fno-omit-frame-pointer)
  add_test(NAME e2e.killed COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_killed.py
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:killed>
    ${CMAKE_CURRENT_BINARY_DIR}/killed.d)
  set_tests_properties(e2e.killed PROPERTIES LABELS e2e TIMEOUT 180)
endif()

# A busy program killed at a random moment: the watcher finishes what its writer was doing.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(killed_busy tracer/killed_busy.c)
  target_link_libraries(killed_busy PRIVATE memtrace_warnings Threads::Threads)
  target_compile_definitions(killed_busy PRIVATE _GNU_SOURCE)
  add_test(NAME e2e.killed_busy COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_killed_busy.py random
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:killed_busy>
    ${CMAKE_CURRENT_BINARY_DIR}/killed_busy.d)
  set_tests_properties(e2e.killed_busy PROPERTIES LABELS e2e TIMEOUT 300)
  # The same, each block from a new call stack: killed inside the callsite table's lock.
  add_test(NAME e2e.killed_new_stacks COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_killed_busy.py new_stacks
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:killed_busy>
    ${CMAKE_CURRENT_BINARY_DIR}/killed_new_stacks.d)
  set_tests_properties(e2e.killed_new_stacks PROPERTIES LABELS e2e TIMEOUT 300)
  # The same program killed while its writer is inside SQLite (strace holds a write).
  add_test(NAME e2e.killed_in_sqlite COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_killed_busy.py in_sqlite
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:killed_busy>
    ${CMAKE_CURRENT_BINARY_DIR}/killed_in_sqlite.d)
  set_tests_properties(e2e.killed_in_sqlite PROPERTIES LABELS e2e TIMEOUT 300
    SKIP_RETURN_CODE 77)
endif()

# Hooks must fit in a thread's small stack, in every unwinding mode.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(small_stack tracer/small_stack.c)
  target_link_libraries(small_stack PRIVATE memtrace_warnings Threads::Threads)
  foreach(mode auto fp libunwind)
    add_test(NAME e2e.small_stack_${mode} COMMAND ${CMAKE_COMMAND} -E env MEMTRACE_UNWIND=${mode}
      MEMTRACE_OUTPUT=${CMAKE_CURRENT_BINARY_DIR}/small_stack_${mode}.db
      $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:small_stack>)
    set_tests_properties(e2e.small_stack_${mode} PROPERTIES LABELS e2e TIMEOUT 60
      PASS_REGULAR_EXPRESSION "small stack ok")
  endforeach()
endif()

# More threads alive at once than buffers the tracer lets wait for the writer.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(many_threads tracer/many_threads.c)
  target_link_libraries(many_threads PRIVATE memtrace_warnings Threads::Threads)
  target_compile_definitions(many_threads PRIVATE _GNU_SOURCE)
  add_test(NAME e2e.many_threads COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_many_threads.sh
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:many_threads>
    ${CMAKE_CURRENT_BINARY_DIR}/many_threads.d)
  set_tests_properties(e2e.many_threads PROPERTIES LABELS e2e TIMEOUT 60)
endif()

# tracer_program_test(NAME): tracer/NAME.c run under the launcher by tracer/check_NAME.py
# (MEMTRACE MEMREPORT PROGRAM WORKDIR), as test e2e.NAME.
function(tracer_program_test name)
  add_executable(${name} tracer/${name}.c)
  target_link_libraries(${name} PRIVATE memtrace_warnings Threads::Threads)
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  add_test(NAME e2e.${name} COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_${name}.py
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:${name}>
    ${CMAKE_CURRENT_BINARY_DIR}/${name}.d)
  set_tests_properties(e2e.${name} PROPERTIES LABELS e2e TIMEOUT 120)
endfunction()

if(TARGET memtrace AND TARGET memtrace_launcher)
  # Threads started one after another: the tracer's memory follows those alive at once.
  tracer_program_test(thread_churn)
  # A thread's record is its own until its task is gone, also when made in a vfork child.
  tracer_program_test(vfork_first_call)
  # A child made by clone() without CLONE_VM, clone3 or a raw fork ends; it is not traced.
  tracer_program_test(unforked_child)
  # A Go program (cgo) ends with a raw exit_group: the launcher says what its capture is.
  add_test(NAME e2e.go_exit COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_go_exit.py
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/go_exit ${CMAKE_CURRENT_BINARY_DIR}/go_exit.d)
  set_tests_properties(e2e.go_exit PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
  # A program ends by exit_group a moment after it starts, reaped before its exit watcher
  # first runs: the watcher finishes its capture all the same.
  tracer_program_test(quick_exit)
  # Children sent SIGTERM as they end on their own (Pool.terminate): no capture lost.
  tracer_program_test(term_at_exit)
  # A program that sets a seccomp filter killing at any call it does not list.
  tracer_program_test(sandboxed)
  # A program at rest: its capture is left alone, its RSS series keeps its shape.
  tracer_program_test(at_rest)
  # main ends with pthread_exit: the process ends with its last thread, as untraced.
  tracer_program_test(main_pthread_exit)
  # A mark keeps its place among the heap calls around it; a mark made before fork stays
  # the parent's.
  tracer_program_test(marks_order)
  target_include_directories(marks_order PRIVATE ${PROJECT_SOURCE_DIR}/preload/include)
  tracer_program_test(fork_mark)
  target_include_directories(fork_mark PRIVATE ${PROJECT_SOURCE_DIR}/preload/include)
  # unshare(CLONE_NEWUSER) and setns need a process of one thread: the writer steps aside.
  tracer_program_test(namespaces)
  # A capture that reaches the file size limit stops; the program is not killed (SIGXFSZ).
  tracer_program_test(file_limit)
  # Under ulimit -v at the program's untraced need plus 48 MiB: the tracer's writer thread
  # takes no glibc arena (64 MiB), so the program's own mallocs still succeed.
  tracer_program_test(address_space)
  # The writer never takes the descriptor number the program's next open() would get.
  tracer_program_test(lowest_fd)
  # A program started with stderr closed: nothing of the tracer's lands in its file there.
  tracer_program_test(stderr_closed)
  # A root program that drops its privileges (setuid, chroot) as it starts keeps its capture.
  tracer_program_test(drop_privileges)
  # One that keeps a capability across its setuid (setpriv) is not aborted by glibc.
  tracer_program_test(keep_caps)
  # A forked child's capture, made at its first event, is made before a setuid or chroot,
  # at an _exit with nothing recorded, with the parent and start time of its fork.
  tracer_program_test(deferred_fork)
  # A program that opens files up to RLIMIT_NOFILE gets as many traced.
  tracer_program_test(fd_limit)
  # errno is 0 as main starts, and as a forked child returns from fork.
  tracer_program_test(errno_start)
  # Heap calls in libraries' constructors that run before libmemtrace.so's and in
  # destructors that run after it are recorded: a library's known calls, and a C++
  # program's counts beside glibc's memusage.
  add_library(early_lib SHARED tracer/early_lib.c)
  add_executable(early_prog tracer/early_prog.c)
  target_link_libraries(early_prog PRIVATE early_lib)
  enable_language(CXX)
  add_executable(early_cxx tracer/early_cxx.cpp)
  add_test(NAME e2e.early_and_late_calls COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_early.py
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:early_prog>
    $<TARGET_FILE:early_cxx> ${CMAKE_CURRENT_BINARY_DIR}/early.d)
  set_tests_properties(e2e.early_and_late_calls PROPERTIES LABELS e2e TIMEOUT 120
                       SKIP_RETURN_CODE 77)
  # The tracer's fatal-signal handlers do not show, and fit a program's small alternate stack.
  tracer_program_test(fatal_handlers)
  # Libraries dlopen'ed with RTLD_DEEPBIND: their heap calls reach the hooks; one with an
  # allocator of its own keeps it.
  add_library(deepbind_dep SHARED tracer/deepbind_dep.c)
  add_library(deepbind_lib SHARED tracer/deepbind_lib.c)
  target_link_libraries(deepbind_lib PRIVATE deepbind_dep)
  add_library(deepbind_own SHARED tracer/deepbind_own.c)
  foreach(lib deepbind_dep deepbind_lib deepbind_own)
    target_compile_options(${lib} PRIVATE -O1)
    target_link_libraries(${lib} PRIVATE memtrace_warnings)
    set_target_properties(${lib} PROPERTIES C_VISIBILITY_PRESET default)
  endforeach()
  add_executable(deepbind tracer/deepbind.c)
  target_compile_definitions(deepbind PRIVATE _GNU_SOURCE)
  target_link_libraries(deepbind PRIVATE memtrace_warnings ${CMAKE_DL_LIBS})
  add_test(NAME e2e.deepbind COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_deepbind.py
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:deepbind>
    $<TARGET_FILE:deepbind_lib> $<TARGET_FILE:deepbind_own> ${CMAKE_CURRENT_BINARY_DIR}/deepbind.d)
  set_tests_properties(e2e.deepbind PROPERTIES LABELS e2e TIMEOUT 120)
  # A thread's first heap call inside pthread_getattr_np (as in every Rust program) does not
  # hang the program: the tracer finds the thread's stack without taking the thread's lock.
  tracer_program_test(getattr_first_call)
  target_compile_options(getattr_first_call PRIVATE -fno-omit-frame-pointer) # for MEMTRACE_UNWIND=fp
  # A small stack limit (ulimit -s 32 KiB): the tracer's start and end do not overflow the
  # program's main thread (file_limit.c is the program).
  add_test(NAME e2e.stack_limit COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_stack_limit.py
    $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:file_limit>
    ${CMAKE_CURRENT_BINARY_DIR}/stack_limit.d)
  set_tests_properties(e2e.stack_limit PROPERTIES LABELS e2e TIMEOUT 300)
  # Event times agree with the program's own clock, over many calibration points and passes.
  tracer_program_test(clock_truth)
  # Code without unwind info but with frame pointers, called from code with it: whole
  # stacks, walked from the cache, as libunwind's unw_backtrace gives them.
  tracer_program_test(no_unwind_info)
  target_sources(no_unwind_info PRIVATE tracer/no_unwind_info_main.c)
  set_source_files_properties(tracer/no_unwind_info.c PROPERTIES COMPILE_OPTIONS
    "-O2;-g0;-fno-omit-frame-pointer;-fno-asynchronous-unwind-tables;-fno-unwind-tables")
endif()

# Fatal signals: the capture is saved, the process dies as it would untraced.
if(TARGET memtrace)
  add_executable(crash tracer/crash.c)
  target_link_libraries(crash PRIVATE memtrace_warnings)
  add_test(NAME e2e.crash COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_crash.sh
    $<TARGET_FILE:memtrace> $<TARGET_FILE:memreport> $<TARGET_FILE:crash>
    ${CMAKE_CURRENT_BINARY_DIR}/crash.d)
  set_tests_properties(e2e.crash PROPERTIES LABELS e2e TIMEOUT 60)
endif()

# Trust: the program's files, fds and output are never harmed, no capture is lost, and the
# launcher reports exactly what a run wrote (tests/tracer/check_trust.py, one test per case).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(trust_prog tracer/trust_prog.c)
  # No frame pointers: new stacks go through libunwind (and its memory-probing pipe).
  target_compile_options(trust_prog PRIVATE -O1 -g -fomit-frame-pointer)
  target_link_libraries(trust_prog PRIVATE memtrace_warnings)
  add_executable(static_prog tracer/static_prog.c)
  target_link_options(static_prog PRIVATE -static)
  add_executable(nopie_prog tracer/nopie_prog.c)
  target_compile_options(nopie_prog PRIVATE -fno-pie)
  target_link_options(nopie_prog PRIVATE -no-pie)
  memtrace_driver_cases(TRUST_CASES ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_trust.py)
  foreach(case ${TRUST_CASES})
    add_test(NAME e2e.trust_${case} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/tracer/check_trust.py
      --launcher $<TARGET_FILE:memtrace_launcher> --lib $<TARGET_FILE:memtrace>
      --memreport $<TARGET_FILE:memreport> --prog $<TARGET_FILE:trust_prog>
      --static-prog $<TARGET_FILE:static_prog> --nopie-prog $<TARGET_FILE:nopie_prog>
      --workdir ${CMAKE_CURRENT_BINARY_DIR}/trust_${case}.d ${case})
    set_tests_properties(e2e.trust_${case} PROPERTIES LABELS e2e TIMEOUT 180)
  endforeach()
endif()

# The writer's live set against a replay in seq order (the base and core objects, no shim).
add_executable(test_live_set unit/test_live_set.c ${MEMTRACE_PRELOAD_OBJECTS})
target_include_directories(test_live_set PRIVATE ${MEMTRACE_PRELOAD_INCLUDES})
target_compile_definitions(test_live_set PRIVATE _GNU_SOURCE)
target_compile_options(test_live_set PRIVATE -ftls-model=initial-exec -fno-omit-frame-pointer)
target_link_libraries(test_live_set PRIVATE memtrace_common_nosan memtrace_warnings
                      PkgConfig::SQLITE3 PkgConfig::LIBUNWIND PkgConfig::LIBDW Threads::Threads
                      ${CMAKE_DL_LIBS} m)
add_test(NAME unit.live_set COMMAND test_live_set)
set_tests_properties(unit.live_set PROPERTIES LABELS unit TIMEOUT 120)
