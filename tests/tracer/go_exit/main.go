// SPDX-License-Identifier: MIT
// A Go program calling C (cgo) with known heap calls: 1000 C.malloc(1000 + i % 7) freed,
// then C.malloc(4242) and C.malloc(777) kept. The Go runtime ends the process with a raw
// exit_group system call, both from os.Exit ("exit": status 3) and from returning from
// main ("return": status 0): no exit handler of the C world runs.
package main

/*
#include <stdlib.h>
static void* volatile kept[2];
static void work(void) {
    for (int i = 0; i < 1000; i++) {
        void* volatile p = malloc(1000 + i % 7);
        free(p);
    }
    kept[0] = malloc(4242);
    kept[1] = malloc(777);
}
*/
import "C"

import (
	"fmt"
	"os"
)

func main() {
	C.work()
	fmt.Println("done")
	if len(os.Args) > 1 && os.Args[1] == "exit" {
		os.Exit(3)
	}
}
