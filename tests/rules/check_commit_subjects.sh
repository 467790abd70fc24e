#!/usr/bin/env bash
# scripts/check-commit-subjects.sh on a repository of its own: a subject of 72 characters
# after the base passes, one of 73 fails, and one of 73 before the base is not looked at.
#   check_commit_subjects.sh SCRIPT WORK_DIR
set -euo pipefail
script=$1 work=$2
command -v git >/dev/null || { echo "no git: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work"
git init -q .
commit() { git -c user.name=t -c user.email=t@t commit -q --allow-empty -m "$1"; }
s72=$(printf 'a%.0s' $(seq 72)) s73=$(printf 'b%.0s' $(seq 73))
commit "$s73"
commit "base"
base=$(git rev-parse HEAD)
commit "$s72"
"$script" . "$base" || { echo "FAIL: a subject of 72 characters was refused"; exit 1; }
commit "$s73"
if "$script" . "$base"; then
    echo "FAIL: a subject of 73 characters was let through"
    exit 1
fi
echo "ok: 72 characters pass, 73 fail, older commits are not looked at"
