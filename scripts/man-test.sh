#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages: taskstate(1), taskstate(4) and the library's pages in
# man/man3 render with `man -l` without a groff or man warning and have a
# NAME line that whatis can read; every function of the library (the
# header's, libtaskstate.map's and the shared library's exports, which
# must be the map's list) has a page of its name, and no page names a
# function that does not exist (negative controls for both); and the
# options of `taskstate --help` and of `taskstate COMMAND
# --help` are exactly those taskstate(1) lists for the command (its
# OPTIONS section for the command itself); README.md's command screen
# names every command and only options they have; and the bash completion
# offers the same commands and options.  Prints TAP; exits non-zero on
# any failure.  Needs no root; builds the command (and the BPF loader its
# bpf command runs) in a temporary directory.
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
# taskstate bpf runs the loader beside it.
make -s -C "$top/bpf" O="$tmp" > "$tmp/build-bpf.log" 2>&1 ||
	{ comment < "$tmp/build-bpf.log"; bail "cannot build the BPF loader"; }
make -s -C "$top/lib" O="$tmp/lib" > "$tmp/build-lib.log" 2>&1 ||
	{ comment < "$tmp/build-lib.log"; bail "cannot build the library"; }

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

for f in "$top"/man/man3/*.3; do
	grep -q '^\.so ' "$f" && continue
	page=man3/${f##*/}
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$f" \
		> /dev/null 2> "$tmp/warn"
	rc=$?
	[ -s "$tmp/warn" ] && rc=1
	lexgrog "$f" > "$tmp/whatis" 2>&1 || rc=1
	[ $rc = 0 ] || comment < "$tmp/warn"
	ok $rc "man -l man/$page renders without warnings ($(head -n1 "$tmp/whatis" | sed 's/^[^"]*//'))"
done

# --- the library's functions and their pages --------------------------------
# The functions libtaskstate.h declares or defines (inline), one a line.
header_funcs() {	# libtaskstate.h
	sed -E 's|/\*.*\*/||g' "$1" | grep -E '^[a-z]' |
		grep -oE '[ *]taskstate_[a-z0-9_]+\(' | tr -d ' *(' | sort -u
}
# The global names of a version script.
map_funcs() {	# libtaskstate.map
	sed -nE 's/^[[:space:]]+(taskstate_[a-z0-9_]+);$/\1/p' "$1" | sort -u
}
# The names a page's NAME section gives (".so" links followed).
page_names() {	# page.3 dir
	local f=$1
	grep -q '^\.so ' "$f" && f=$2/$(sed -n 's|^\.so man3/||p' "$f")
	awk '/^\.SH NAME/ { on = 1; next } /^\.SH/ { on = 0 } on' "$f" |
		sed 's/ \\- .*//' | tr ',' '\n' | tr -d ' '
}
# Functions of FUNCS without a page DIR/NAME.3 that names them.
missing_pages() {	# funcs-file dir
	local fn
	while read -r fn; do
		if [ ! -f "$2/$fn.3" ]; then
			echo "$fn: no page man3/$fn.3"
		elif ! page_names "$2/$fn.3" "$2" | grep -qx -- "$fn"; then
			echo "$fn: man3/$fn.3 does not name it"
		fi
	done < "$1"
}
# Names in the pages (their NAME sections, and every "taskstate_x(" or
# ".BR taskstate_x (") that are not functions of KNOWN.
unknown_names() {	# known-file dir page...
	local known=$1 dir=$2 f name
	shift 2
	for f in "$@"; do
		if grep -q '^\.so ' "$f"; then
			[ -f "$dir/$(sed -n 's|^\.so man3/||p' "$f")" ] ||
				echo "${f##*/}: .so to a missing page"
			continue
		fi
		{ case $f in *.3) page_names "$f" "$dir" ;; esac
		  grep -oE 'taskstate_[a-z0-9_]+ ?\(' "$f" | tr -d ' ('; } |
			grep -v -x -e libtaskstate -e '' | sort -u |
			while read -r name; do
				grep -qx -- "$name" "$known" || echo "${f##*/}: $name: no such function"
			done
	done
}

header_funcs "$top/lib/libtaskstate.h" > "$tmp/hdr"
map_funcs "$top/lib/libtaskstate.map" > "$tmp/map"
objdump -T "$tmp/lib/libtaskstate.so.0" | awk '$4 == ".text" { print $(NF - 1), $NF }' |
	sort -k2 > "$tmp/so-versioned"
awk '{ print $2 }' "$tmp/so-versioned" > "$tmp/so"
rc=0
[ -s "$tmp/map" ] && cmp -s "$tmp/map" "$tmp/so" || { diff "$tmp/map" "$tmp/so" | comment; rc=1; }
# Each under the version node the map gives it.
awk '/^LIBTASKSTATE_[0-9.]+ \{/ { node = $1 }
     /^\t\ttaskstate_[a-z_0-9]*;$/ { sub(/^\t\t/, ""); sub(/;$/, ""); print node, $0 }' \
	"$top/lib/libtaskstate.map" | sort -k2 > "$tmp/map-versioned"
diff "$tmp/map-versioned" "$tmp/so-versioned" | comment
cmp -s "$tmp/map-versioned" "$tmp/so-versioned" || rc=1
# Every exported function is declared by the header.
comm -23 "$tmp/map" "$tmp/hdr" | sed 's/$/: exported, not in libtaskstate.h/' | comment
[ -z "$(comm -23 "$tmp/map" "$tmp/hdr")" ] || rc=1
ok $rc "libtaskstate.so.0 exports the $(wc -l < "$tmp/map") functions of libtaskstate.map, each under its version node, all declared in libtaskstate.h"

sort -u "$tmp/hdr" "$tmp/map" "$tmp/so" > "$tmp/funcs"
missing_pages "$tmp/funcs" "$top/man/man3" > "$tmp/out"
rc=0
[ -s "$tmp/out" ] && { comment < "$tmp/out"; rc=1; }
ok $rc "man3: a page for each of the library's $(wc -l < "$tmp/funcs") functions, naming it"

# What a page may name: the library's functions and the uapi header's
# inline helpers (taskstate_state(), taskstate_map_entry_read(), ...).
{ cat "$tmp/funcs"
  grep -oE '^(static __inline__ [a-z_0-9 *]+ \**)?taskstate_[a-z0-9_]+\(' \
	"$top/include/uapi/linux/taskstate.h" | grep -oE 'taskstate_[a-z0-9_]+'
  sed -nE 's/^(taskstate_[a-z0-9_]+)\(.*/\1/p' "$top/include/uapi/linux/taskstate.h"
} | sort -u > "$tmp/known"
unknown_names "$tmp/known" "$top/man/man3" "$top"/man/man3/*.3 "$top/man/taskstate.4" > "$tmp/out"
rc=0
[ -s "$tmp/out" ] && { comment < "$tmp/out"; rc=1; }
ok $rc "man3 and taskstate(4) name only functions that exist ($(ls "$top"/man/man3/*.3 | wc -l) pages)"

# Negative controls: a function without its page, a page naming a
# function that does not exist, a link to a missing page.
cp -r "$top/man/man3" "$tmp/man3-bad"
rm "$tmp/man3-bad/taskstate_untrack.3"
sed -i 's/^taskstate_sample \\-/taskstate_sample, taskstate_sample_totals \\-/' "$tmp/man3-bad/taskstate_sample.3"
echo '.so man3/taskstate_gone.3' > "$tmp/man3-bad/taskstate_gone_link.3"
missing_pages "$tmp/funcs" "$tmp/man3-bad" > "$tmp/out"
unknown_names "$tmp/known" "$tmp/man3-bad" "$tmp/man3-bad"/*.3 >> "$tmp/out"
[ "$(wc -l < "$tmp/out")" = 3 ] && grep -q '^taskstate_untrack: no page' "$tmp/out" &&
	grep -q 'taskstate_sample_totals: no such function' "$tmp/out" &&
	grep -q 'taskstate_gone_link.3: .so to a missing page' "$tmp/out"
rc=$?
[ $rc = 0 ] || comment < "$tmp/out"
ok $rc "negative control: a missing page, a page naming taskstate_sample_totals and a dangling link are reported, and only those"

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
