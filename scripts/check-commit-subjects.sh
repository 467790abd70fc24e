#!/usr/bin/env bash
# Commit subjects of at most 72 characters (CONTRIBUTING.md), checked on every commit made
# after the rule came in (BASE, the last commit before it: older subjects cannot be
# rewritten). Run by .ci/run; exits 1 naming each commit whose subject is longer.
#   scripts/check-commit-subjects.sh [REPO_DIR [BASE]]
set -euo pipefail
repo=${1:-$(dirname "$0")/..}
base=${2:-86c24a89782a595ae7580fcb1d5592d74cc11eae}
max=72
# Longer subjects that reached main after the rule (main's history is not rewritten): these
# and no others are let through.
landed_long=" e18d3b02e9e13dffd2f960a00d968bf00f50422c "
if ! git -C "$repo" rev-parse -q --verify "$base^{commit}" >/dev/null; then
    echo "check-commit-subjects: $base is not in this history (a shallow clone?): not checked"
    exit 0
fi
long=0
while IFS= read -r line; do
    subject=${line#* }
    if [ "${#subject}" -gt "$max" ] && [[ $landed_long != *" ${line%% *} "* ]]; then
        echo "commit ${line%% *}: subject of ${#subject} characters (at most $max): $subject"
        long=1
    fi
done < <(git -C "$repo" log --format='%H %s' "$base..HEAD")
exit "$long"
