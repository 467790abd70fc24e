// SPDX-License-Identifier: MIT
// What a base/, model/ or cmd/ file must not do (tests/reports/layer_guard.cmake).
#include <jansson.h>

int probe(void);
int probe(void) {
    json_t* j = json_true();
    json_decref(j);
    return 0;
}
