# Warning flags on one INTERFACE target; every project target links it.
add_library(memtrace_warnings INTERFACE)
target_compile_options(memtrace_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wstrict-prototypes -Wmissing-prototypes
  -Wshadow -Wformat=2 -Wundef -Wvla -Werror=implicit-function-declaration -Werror=return-type>
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
if(MEMTRACE_WERROR)
  target_compile_options(memtrace_warnings INTERFACE -Werror)
endif()
target_compile_definitions(memtrace_warnings INTERFACE MEMTRACE_DEBUG=${MEMTRACE_DEBUG})
