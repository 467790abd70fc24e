# Symbolization tests: the symbolizer unit test with its subject library in four
# builds (DWARF, .symtab only, .dynsym only, separate debug file via .gnu_debuglink), and
# e2e tests that trace programs and check exact stacks with `memreport stacks --json`.
add_library(symtest SHARED symbols/symtest_lib.c)
# No SONAME: the four copies must load side by side as distinct objects.
set_target_properties(symtest PROPERTIES NO_SONAME ON C_VISIBILITY_PRESET hidden)
target_compile_options(symtest PRIVATE -g -O2)
target_link_libraries(symtest PRIVATE memtrace_warnings)

set(SYMTEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/symtest)
file(MAKE_DIRECTORY ${SYMTEST_DIR})
set(SYMTEST_VARIANTS ${SYMTEST_DIR}/libsymtest.so ${SYMTEST_DIR}/libsymtest_nodebug.so
  ${SYMTEST_DIR}/libsymtest_stripped.so ${SYMTEST_DIR}/libsymtest_split.so
  ${SYMTEST_DIR}/libsymtest_split.debug)
add_custom_command(OUTPUT ${SYMTEST_VARIANTS}
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:symtest> ${SYMTEST_DIR}/libsymtest.so
  COMMAND ${CMAKE_OBJCOPY} --strip-debug $<TARGET_FILE:symtest> ${SYMTEST_DIR}/libsymtest_nodebug.so
  COMMAND ${CMAKE_STRIP} --strip-all -o ${SYMTEST_DIR}/libsymtest_stripped.so $<TARGET_FILE:symtest>
  COMMAND ${CMAKE_OBJCOPY} --only-keep-debug $<TARGET_FILE:symtest> ${SYMTEST_DIR}/libsymtest_split.debug
  COMMAND ${CMAKE_STRIP} --strip-all -o ${SYMTEST_DIR}/libsymtest_split.tmp $<TARGET_FILE:symtest>
  COMMAND ${CMAKE_OBJCOPY} --add-gnu-debuglink=libsymtest_split.debug libsymtest_split.tmp libsymtest_split.so
  COMMAND ${CMAKE_COMMAND} -E remove libsymtest_split.tmp
  WORKING_DIRECTORY ${SYMTEST_DIR}
  DEPENDS symtest
  COMMENT "symtest library variants")
add_custom_target(symtest_variants ALL DEPENDS ${SYMTEST_VARIANTS})

memtrace_unit_test(symcache)
memtrace_unit_test(symbolize symbols/symtest_cxx.cpp)
add_dependencies(test_symbolize symtest_variants)
target_compile_definitions(test_symbolize PRIVATE SYMTEST_DIR="${SYMTEST_DIR}")
# -O2 -g whatever the build type: the test checks inlined chains and exact lines.
target_compile_options(test_symbolize PRIVATE -O2 -g)
target_link_libraries(test_symbolize PRIVATE ${CMAKE_DL_LIBS})
# The reports' reader of the inlined chains the symbolizer stores (reporter/model/inlined.h).
memtrace_unit_test(inlined)
# Short C++ names for display (reporter/base/cxx_names.h).
memtrace_unit_test(cxx_names)

# ---- e2e: trace e2e_stacks (built with and without frame pointers) and check exact chains
if(TARGET memtrace AND TARGET memtrace_launcher)
  foreach(variant fp nofp)
    add_executable(e2e_stacks_${variant} symbols/e2e_stacks.c)
    target_link_libraries(e2e_stacks_${variant} PRIVATE memtrace_warnings Threads::Threads
      ${CMAKE_DL_LIBS})
    target_compile_definitions(e2e_stacks_${variant} PRIVATE _GNU_SOURCE)
  endforeach()
  target_compile_options(e2e_stacks_fp PRIVATE -O2 -g -fno-omit-frame-pointer)
  target_compile_options(e2e_stacks_nofp PRIVATE -O2 -g -fomit-frame-pointer)
  foreach(lib dl_one dl_two)
    add_library(${lib} SHARED symbols/${lib}.c)
    set_target_properties(${lib} PROPERTIES NO_SONAME ON C_VISIBILITY_PRESET hidden)
    target_compile_options(${lib} PRIVATE -O2 -g)
    target_link_libraries(${lib} PRIVATE memtrace_warnings)
  endforeach()

  set(SYM_DRIVER ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_stacks.py
    --memtrace $<TARGET_FILE:memtrace_launcher> --memreport $<TARGET_FILE:memreport>)
  # check_stacks.py --list: each case and the builds it runs on; a test per pair, named
  # with the build only when the case runs on both.
  memtrace_driver_cases(STACKS_CASES ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_stacks.py)
  foreach(line ${STACKS_CASES})
    separate_arguments(variants UNIX_COMMAND "${line}")
    list(POP_FRONT variants case)
    list(LENGTH variants n)
    foreach(variant ${variants})
      set(name e2e.stacks_${case})
      if(n GREATER 1)
        set(name ${name}_${variant})
      endif()
      add_test(NAME ${name}
        COMMAND ${SYM_DRIVER} --prog $<TARGET_FILE:e2e_stacks_${variant}> --case ${case}
          --lib1 $<TARGET_FILE:dl_one> --lib2 $<TARGET_FILE:dl_two>
          # a directory per test: tests of one program run in parallel
          --workdir ${CMAKE_CURRENT_BINARY_DIR}/symbols_e2e/${name})
      set_tests_properties(${name} PROPERTIES LABELS e2e TIMEOUT 120)
    endforeach()
  endforeach()
endif()

# ---- Rust names: every symbol of a rustc-built program (v0, as rustc's standard library
# is built, and legacy), named by the symbolizer as c++filt names it, without the hash
# (symbols/check_rust_names.py; skipped without rustc).
add_executable(demangle_tool symbols/demangle_tool.c)
target_include_directories(demangle_tool PRIVATE ${PROJECT_SOURCE_DIR}/common)
target_link_libraries(demangle_tool PRIVATE memtrace_common memtrace_warnings)
add_test(NAME e2e.symbols_rust_names COMMAND ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_rust_names.py $<TARGET_FILE:demangle_tool>
  ${CMAKE_CURRENT_SOURCE_DIR}/rust/hello.rs ${CMAKE_CURRENT_BINARY_DIR}/rust_names.d)
set_tests_properties(e2e.symbols_rust_names PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)

# ---- e2e: a fully stripped program groups its return addresses by function (.eh_frame),
# as its unstripped twin does by name (symbols/check_stripped.py).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(stripped_prog symbols/stripped_prog.c)
  target_compile_options(stripped_prog PRIVATE -O1 -g -fno-omit-frame-pointer)
  target_link_libraries(stripped_prog PRIVATE memtrace_warnings)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/stripped_prog_bare
    COMMAND ${CMAKE_STRIP} --strip-all -o ${CMAKE_CURRENT_BINARY_DIR}/stripped_prog_bare
      $<TARGET_FILE:stripped_prog>
    DEPENDS stripped_prog)
  add_custom_target(stripped_prog_bare ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/stripped_prog_bare)
  add_test(NAME e2e.stacks_stripped COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_stripped.py $<TARGET_FILE:memtrace_launcher>
    $<TARGET_FILE:memreport> $<TARGET_FILE:stripped_prog>
    ${CMAKE_CURRENT_BINARY_DIR}/stripped_prog_bare ${CMAKE_CURRENT_BINARY_DIR}/stripped.d)
  set_tests_properties(e2e.stacks_stripped PROPERTIES LABELS e2e TIMEOUT 120)
endif()

# ---- e2e: only a symbol cache private to the user names frames; forged caches of
# another user, writable by others, symlinked or with invalid rows are ignored and untouched.
if(TARGET memtrace AND TARGET memtrace_launcher)
  # other_owner exits 77 (skipped) when not root: it needs chown.
  memtrace_driver_cases(CACHE_TRUST_PARTS ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_cache_trust.py)
  foreach(part ${CACHE_TRUST_PARTS})
    add_test(NAME e2e.stacks_cache_trust_${part}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_cache_trust.py
        --memtrace $<TARGET_FILE:memtrace_launcher> --memreport $<TARGET_FILE:memreport>
        --workdir ${CMAKE_CURRENT_BINARY_DIR}/symbols_e2e_trust_${part}
        --prog $<TARGET_FILE:e2e_stacks_nofp> ${part})
    set_tests_properties(e2e.stacks_cache_trust_${part} PROPERTIES LABELS e2e TIMEOUT 300
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()

# ---- e2e: libmemtrace.so loads libdw only when a frame must be named from its module's file
# (linkage, a warm cache never loads it, a cold one does, a machine without it defers names).
if(TARGET memtrace AND TARGET memtrace_launcher)
  foreach(prog exit_in_dlopen fork_names)
    add_executable(${prog} symbols/${prog}.c)
    target_compile_options(${prog} PRIVATE -O2 -g -fno-omit-frame-pointer)
    target_compile_definitions(${prog} PRIVATE _GNU_SOURCE)
    target_link_libraries(${prog} PRIVATE memtrace_warnings Threads::Threads ${CMAKE_DL_LIBS})
  endforeach()
  memtrace_driver_cases(LAZY_LIBDW_PARTS ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_lazy_libdw.py)
  foreach(part ${LAZY_LIBDW_PARTS})
    add_test(NAME e2e.symbols_lazy_libdw_${part}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/symbols/check_lazy_libdw.py
        --memtrace $<TARGET_FILE:memtrace_launcher> --memreport $<TARGET_FILE:memreport>
        --lib $<TARGET_FILE:memtrace> --prog $<TARGET_FILE:e2e_stacks_fp>
        --exit-prog $<TARGET_FILE:exit_in_dlopen> --fork-prog $<TARGET_FILE:fork_names>
        --workdir ${CMAKE_CURRENT_BINARY_DIR}/symbols_e2e_lazy_libdw_${part} ${part})
    set_tests_properties(e2e.symbols_lazy_libdw_${part} PROPERTIES LABELS e2e TIMEOUT 120)
  endforeach()
endif()

# C++ names as reports show them, on a program built by g++ (symbols/cxx_names_prog.cpp).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(cxx_names_prog symbols/cxx_names_prog.cpp)
  target_compile_options(cxx_names_prog PRIVATE -O0 -g -fno-omit-frame-pointer)
  set_target_properties(cxx_names_prog PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
  add_test(NAME e2e.cxx_names
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/symbols/cxx_names_test.py
            $<TARGET_FILE:memreport> $<TARGET_FILE:memtrace_launcher>
            $<TARGET_FILE:cxx_names_prog> ${CMAKE_CURRENT_BINARY_DIR}/cxx-names)
  set_tests_properties(e2e.cxx_names PROPERTIES LABELS e2e TIMEOUT 300)
  # The Functions tab of the flame graph page and of memreport view in headless chromium:
  # the standard library passed as top passes it (symbols/cxx_page_test.py).
  add_test(NAME e2e.cxx_page
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/symbols/cxx_page_test.py
            $<TARGET_FILE:memreport> $<TARGET_FILE:memtrace_launcher>
            $<TARGET_FILE:cxx_names_prog> ${CMAKE_CURRENT_BINARY_DIR}/cxx-page)
  set_tests_properties(e2e.cxx_page PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
