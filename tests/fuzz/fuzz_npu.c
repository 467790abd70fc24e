// SPDX-License-Identifier: MIT
// libFuzzer target: the NPU compiler log parser (mr_npu_parse_fd) on arbitrary text, as
// `memreport import` and `plot` read it (the input is a memfd, so the regular-file path
// is taken), then the plotted series built from what it parsed.
#include "npu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    int fd = memfd_create("fuzz_npu", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
        perror("fuzz_npu: memfd");
        abort();
    }
    char err[256];
    mr_npu_log log;
    if (mr_npu_parse_fd(fd, "fuzz.log", true, &log, err, sizeof err) == 0) {
        if (log.max_raw.n > 0) {
            mr_npu_series s;
            if (mr_npu_series_build(&s, log.legacy, &log.max_raw, &log.frag, &log.used, &log.free,
                                    &log.regions, &log.nregions) == 0)
                mr_npu_series_free(&s);
        }
        mr_npu_log_free(&log);
    }
    close(fd);
    return 0;
}
