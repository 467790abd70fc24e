# SQL over a capture (memtrace/sql.h): memreport sql's tables in memtrace_common, and the same
# virtual tables (sql_vtab.c) as a loadable SQLite extension:
#   sqlite3 cap.db '.load build/common/memtrace_sqlite' 'select count(*) from events'
target_sources(memtrace_common PRIVATE sql.c sql_vtab.c sql_merge.c sql_addrmap.c)
add_library(memtrace_sqlite MODULE sql_vtab.c sql_merge.c sql_addrmap.c codec.c codec_zstd.c)
set_target_properties(memtrace_sqlite PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden)
target_compile_definitions(memtrace_sqlite PRIVATE MT_SQL_EXTENSION)
target_include_directories(memtrace_sqlite PRIVATE include ${SQLITE3_INCLUDE_DIRS})
target_link_libraries(memtrace_sqlite PRIVATE memtrace_warnings PkgConfig::ZSTD)
