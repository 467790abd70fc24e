// SPDX-License-Identifier: MIT
// Human units for bytes and durations, shared by every report. Sizes are 1024-based and
// labelled as such (IEC: B, KiB, MiB, GiB, TiB). The NPU heap plot alone keeps upstream's
// labels (KB/MB/GB for the same 1024 multiples), because it reproduces upstream's plotter.
// Pure functions.
#ifndef MEMTRACE_UNITS_H
#define MEMTRACE_UNITS_H

#include <stddef.h>
#include <stdint.h>

typedef struct mt_byte_unit {
    const char* name; // "B", "KiB", "MiB", "GiB", "TiB" (NPU plot: "B", "KB", "MB", "GB")
    uint64_t scale;   // 1, 1024, 1024^2, ...
} mt_byte_unit;

// The unit for axis values up to `peak`: the largest of B, KiB, MiB, GiB, TiB whose scale
// is <= peak.
mt_byte_unit mt_units_for_bytes(uint64_t peak);
// Upstream NPU plotter's unit for `peak`: >= 2^30 GB, >= 2^20 MB, >= 2^10 KB, else B.
mt_byte_unit mt_units_npu_for_bytes(uint64_t peak);
// "1.50 MiB"; small values exact ("512 B"). Returns buf.
char* mt_units_format_bytes(uint64_t bytes, char* buf, size_t len);
// "1.234 s", "12.5 ms", "850 us", "120 ns". Returns buf.
char* mt_units_format_duration(int64_t ns, char* buf, size_t len);

#endif
