#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages: taskstate(1) and taskstate(4) render with `man -l`
# without a groff or man warning and have a NAME line that whatis can
# read; and the options of `taskstate --help` and of `taskstate COMMAND
# --help` are exactly those taskstate(1) lists for the command (its
# OPTIONS section for the command itself).  Prints TAP; exits non-zero on
# any failure.  Needs no root; builds the command in a temporary directory.
#
#   scripts/man-test.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tap.sh
. "$top/scripts/tap.sh"

command -v man >/dev/null || bail "man is missing (run make deps)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$top/tools" O="$tmp" "$tmp/taskstate" > "$tmp/build.log" 2>&1 ||
	{ comment < "$tmp/build.log"; bail "cannot build the command"; }
cli=$tmp/taskstate

for page in taskstate.1 taskstate.4; do
	f=$top/man/$page
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" \
		> /dev/null 2> "$tmp/warn"
	rc=$?
	[ -s "$tmp/warn" ] && rc=1
	LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$f" 2>> "$tmp/warn" | col -b > "$tmp/$page.txt"
	grep -q '^NAME' "$tmp/$page.txt" && [ "$(wc -l < "$tmp/$page.txt")" -gt 20 ] || rc=1
	lexgrog "$f" > "$tmp/whatis" 2>&1 || rc=1
	[ $rc = 0 ] || comment < "$tmp/warn"
	ok $rc "man -l man/$page renders without warnings ($(wc -l < "$tmp/$page.txt") lines; $(sed 's/^[^"]*//' "$tmp/whatis"))"
done

# The option names (-x, --long) of option lines: in a help text, lines
# that start with blanks and a dash; in the rendered page, the tag lines
# (seven blanks, a dash) under "   taskstate COMMAND" (a subsection) or
# under OPTIONS for the command itself.
help_opts() {
	grep -E '^ +-' | grep -oE '(^|[ ,])--?[a-z][a-z-]*' | tr -d ' ,' | sort -u
}
man_opts() {	# command ("" for the command itself)
	awk -v want="$1" '
	/^[A-Z]/ { sec = $0; cmd = "-" }
	sec == "COMMANDS" && /^   taskstate [a-z]+$/ { cmd = $2; next }
	sec == "OPTIONS" { cmd = "" }
	cmd == want && /^       -/ { print }' "$tmp/taskstate.1.txt" |
		grep -oE '(^|[ ,])--?[a-z][a-z-]*' | tr -d ' ,' | sort -u
}

for cmd in "" track untrack show watch top metrics info; do
	# shellcheck disable=SC2086
	"$cli" $cmd --help > "$tmp/help" 2>&1
	rc=$?
	help_opts < "$tmp/help" > "$tmp/h"
	man_opts "$cmd" > "$tmp/m"
	[ -s "$tmp/h" ] || rc=1
	if ! cmp -s "$tmp/h" "$tmp/m"; then
		diff "$tmp/h" "$tmp/m" | sed -n 's/^< /only in --help: /p; s/^> /only in the man page: /p' | comment
		rc=1
	fi
	ok $rc "taskstate ${cmd:+$cmd }--help and taskstate(1) list the same options: $(tr '\n' ' ' < "$tmp/h")"
done

# Every command of the help has its subsection.
"$cli" --help | sed -n '/^Commands:/,/^$/p' | awk '/^  [a-z]/ { print $1 }' | sort -u > "$tmp/hc"
grep -E '^   taskstate [a-z]+$' "$tmp/taskstate.1.txt" | awk '{ print $2 }' | sort -u > "$tmp/mc"
cmp -s "$tmp/hc" "$tmp/mc"
rc=$?
[ $rc = 0 ] || diff "$tmp/hc" "$tmp/mc" | comment
ok $rc "the same commands in --help and taskstate(1): $(tr '\n' ' ' < "$tmp/hc")"

echo "1..$n"
echo "# man-test: $((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
