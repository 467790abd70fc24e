#!/bin/sh
# Writes a man page (roff) from a program's own --help, so the page always says what the
# built program does. Run at build time by CMake (cmake/Install.cmake).
# Usage: scripts/gen-man.sh memtrace|memreport PROGRAM VERSION OUT
#   memtrace:  the page holds `memtrace --help`.
#   memreport: `memreport --help`, then `memreport COMMAND --help` for every command it lists.
set -eu
name=$1 prog=$2 version=$3 out=$4
tmp="$out.tmp"

# Help text as literal roff: backslashes escaped, lines starting with . or ' made plain
# text, '-' written as \- (a real minus, so options can be searched and copied).
roff_text() {
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"
}

help_of() {
    # A missing or failing --help must fail the build, not write an empty page.
    "$prog" "$@" --help >"$tmp.help"
    [ -s "$tmp.help" ] || { echo "gen-man: $prog $* --help printed nothing" >&2; exit 1; }
}

upper=$(echo "$name" | tr a-z A-Z)
{
    printf '.TH %s 1 "" "memtrace %s" "User Commands"\n' "$upper" "$version"
    echo '.SH NAME'
    case $name in
    memtrace) echo 'memtrace \- run a program with every heap call recorded (memtrace capture)' ;;
    memreport) echo 'memreport \- reports, plots and flame graphs of memtrace captures' ;;
    *) echo "gen-man: unknown page $name" >&2; exit 1 ;;
    esac
    help_of
    echo '.SH SYNOPSIS'
    # The usage line(s) as printed: "usage: memtrace [-o FILE] ..."
    sed -n 's/^usage: //p' "$tmp.help" | roff_text | sed 's/$/\n.br/'
    echo '.SH DESCRIPTION'
    echo '.nf'
    grep -v '^usage: ' "$tmp.help" | sed '/./,$!d' | roff_text
    echo '.fi'
    if [ "$name" = memreport ]; then
        echo '.SH COMMANDS'
        # The command list of the main help: "  NAME   description" lines after "commands:".
        commands=$(sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$tmp.help")
        [ -n "$commands" ] || { echo "gen-man: no commands in $prog --help" >&2; exit 1; }
        for c in $commands; do
            help_of "$c"
            printf '.SS %s\n.nf\n' "$c"
            roff_text <"$tmp.help"
            echo '.fi'
        done
    fi
    echo '.SH SEE ALSO'
    case $name in
    memtrace)
        echo '.BR memreport (1)'
        pages='tracing.md (what is recorded, every setting), process-trees.md, long-running.md, python.md, leaks.md, annotations.md, tracer.md (how the tracer works)'
        ;;
    memreport)
        echo '.BR memtrace (1)'
        pages='reports.md (every report), view.md, exports-and-sql.md, leaks.md, names.md, npu.md, capture-format.md'
        ;;
    esac
    echo '.PP'
    echo 'The documentation is README.md and the pages of docs/, in the source and in'
    echo 'share/doc/memtrace/ under the installation prefix (/usr/share/doc/memtrace in the'
    echo "Debian package): $pages."
} >"$tmp"
rm -f "$tmp.help"
mv "$tmp" "$out"
