// SPDX-License-Identifier: MIT
// Prints mr_npu_is_word for every code point 0..0x10FFFF, one byte each ('1' word, '0' not),
// for scripts/gen_word_table.py --compare, which checks it against Python's re.match(r'\w').
#include "npu.h"

#include <stdio.h>

int main(void) {
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++)
        putchar(mr_npu_is_word(cp) ? '1' : '0');
    return fflush(stdout) == 0 ? 0 : 1;
}
