# Sanitizers apply to code that is never injected into a traced program
# (common, reporter, unit tests). libmemtrace.so is never built with them.
add_library(memtrace_sanitizers INTERFACE)
if(MEMTRACE_SANITIZE)
  string(REPLACE ";" "," _mt_san "${MEMTRACE_SANITIZE}")
  target_compile_options(memtrace_sanitizers INTERFACE -fsanitize=${_mt_san} -fno-omit-frame-pointer)
  target_link_options(memtrace_sanitizers INTERFACE -fsanitize=${_mt_san})
endif()
