#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages: taskstate(1) and taskstate(4) render with `man -l`
# without a groff or man warning and have a NAME line that whatis can
# read; and the options of `taskstate --help` and of `taskstate COMMAND
# --help` are exactly those taskstate(1) lists for the command (its
# OPTIONS section for the command itself); README.md's command screen
# names every command and only options they have; and the bash completion
# offers the same commands and options.  Prints TAP; exits non-zero on
# any failure.  Needs no root; builds the command in a temporary directory.
#
#   scripts/man-test.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"

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
	grep -E '^ +-' | grep -oE '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u
}
man_opts() {	# command ("" for the command itself)
	awk -v want="$1" '
	/^[A-Z]/ { sec = $0; cmd = "-" }
	sec == "COMMANDS" && /^   taskstate [a-z]+$/ { cmd = $2; next }
	sec == "OPTIONS" { cmd = "" }
	cmd == want && /^       -/ { print }' "$tmp/taskstate.1.txt" |
		grep -oE '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u
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

# README.md's command screen (the code block under "## Commands") names
# every command of --help, and no option that command's --help lacks.
readme_cmds() {	# README.md: "command option..." per line of the screen
	awk '/^## Commands/ { s = 1; next } /^## / { s = 0 }
	     s && /^```/ { b = !b; next }
	     s && b && /^taskstate [a-z]/ { print }' "$top/README.md" |
		while read -r _ c rest; do
			printf '%s' "$c"
			# shellcheck disable=SC2046 # one word per option
			printf ' %s' $(echo "$rest" | grep -oE '(^|[ [(|])--?[a-zA-Z][a-z-]*' |
				tr -d ' [(|')
			echo
		done
}
rc=0
readme_cmds > "$tmp/rc"
awk '{ print $1 }' "$tmp/rc" | grep -v '^-' | sort -u > "$tmp/rcmds"
if ! cmp -s "$tmp/hc" "$tmp/rcmds"; then
	diff "$tmp/hc" "$tmp/rcmds" | sed -n 's/^< /not in README.md: /p; s/^> /not a command: /p' | comment
	rc=1
fi
while read -r c opts; do
	case $c in -*) continue ;; esac
	"$cli" "$c" --help 2>&1 | help_opts > "$tmp/h"
	for o in $opts; do
		grep -qxF -- "$o" "$tmp/h" ||
			{ echo "# README.md: taskstate $c $o: not in its --help"; rc=1; }
	done
done < "$tmp/rc"
ok $rc "README.md's command screen: every command of --help, only options its --help has"

# The bash completion (tools/completion/taskstate) offers the commands
# and each command's options of --help, and the values of a few options.
comp() {	# words of the command line, the last one being completed
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ));
		 _taskstate; printf "%s\n" "${COMPREPLY[@]}"' \
		sh "$top/tools/completion/taskstate" "$@" | grep . | sort -u
}
bash -n "$top/tools/completion/taskstate"
rc=$?
comp "$cli" "" > "$tmp/cc"
cmp -s "$tmp/hc" "$tmp/cc" || { diff "$tmp/hc" "$tmp/cc" | comment; rc=1; }
for cmd in "" track untrack show watch top metrics info; do
	# shellcheck disable=SC2086
	"$cli" $cmd --help | help_opts > "$tmp/h"
	# shellcheck disable=SC2086
	comp "$cli" $cmd - > "$tmp/c"
	cmp -s "$tmp/h" "$tmp/c" ||
		{ echo "# ${cmd:-taskstate}:"; diff "$tmp/h" "$tmp/c" | comment; rc=1; }
done
[ "$(comp "$cli" top -o "" | tr '\n' ' ')" = "blocked other runnable running sleeping tid " ] || rc=1
[ "$(comp "$cli" watch --stuck-states S,b)" = "S,blocked" ] || rc=1
[ "$(comp "$cli" metrics --group-by c | tr '\n' ' ')" = "cgroup comm " ] || rc=1
ok $rc "bash completion: the commands, each command's options of --help, option values"

tap_done man-test
