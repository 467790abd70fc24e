// SPDX-License-Identifier: MIT
// Human units for bytes and durations. No allocation.
#include "memtrace/units.h"

#include <stdio.h>

mt_byte_unit mt_units_for_bytes(uint64_t peak) {
    static const char* const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned i = 0;
    while (i + 1 < sizeof names / sizeof *names && peak >= (1ull << (10 * (i + 1))))
        i++;
    return (mt_byte_unit){names[i], 1ull << (10 * i)};
}

mt_byte_unit mt_units_npu_for_bytes(uint64_t peak) {
    if (peak >= (1ull << 30))
        return (mt_byte_unit){"GB", 1ull << 30};
    if (peak >= (1ull << 20))
        return (mt_byte_unit){"MB", 1ull << 20};
    if (peak >= (1ull << 10))
        return (mt_byte_unit){"KB", 1ull << 10};
    return (mt_byte_unit){"B", 1};
}

char* mt_units_format_bytes(uint64_t bytes, char* buf, size_t len) {
    mt_byte_unit u = mt_units_for_bytes(bytes);
    if (u.scale == 1)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.2f %s", (double)bytes / (double)u.scale, u.name);
    return buf;
}

char* mt_units_format_duration(int64_t ns, char* buf, size_t len) {
    double v = (double)ns;
    if (ns >= 1000000000)
        snprintf(buf, len, "%.3f s", v / 1e9);
    else if (ns >= 1000000)
        snprintf(buf, len, "%.1f ms", v / 1e6);
    else if (ns >= 1000)
        snprintf(buf, len, "%.0f us", v / 1e3);
    else
        snprintf(buf, len, "%lld ns", (long long)ns);
    return buf;
}
