#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""reporter/model/ says nothing itself (CONTRIBUTING.md): its functions return 0 or a
negative errno and put a message for people in the caller's buffer; the cmd layer prints it
as "memreport: FILE: ..." and picks the exit code. So no model object refers to stderr or
to the functions that print a message or pick an exit code (base/messages.h). The progress
indicator (mr_messages_progress, a terminal's only) is the one thing the model may show.

Usage: check_model_quiet.py NM LIBMEMREPORT_MODEL.a
"""
import subprocess
import sys

SAYS = {"stderr", "perror", "mr_messages_error", "mr_messages_exit_code",
        "mr_messages_note_written"}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    nm, archive = sys.argv[1:]
    out = subprocess.run([nm, archive], capture_output=True, text=True, check=True).stdout
    bad, member, members = [], None, 0
    for line in out.splitlines():
        if line.endswith(".o:"):
            member = line[:-1]
            members += 1
            continue
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U" and parts[1] in SAYS:
            bad.append(f"{member}: uses {parts[1]}")
    for b in bad:
        print("FAIL:", b)
    print(f"{members} model objects, {len(bad)} that say something themselves")
    return 1 if bad or not members else 0


if __name__ == "__main__":
    sys.exit(main())
