#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The documentation: every relative link in README.md, NEWS.md and
# docs/*.md resolves (a file or directory of the tree, and an #anchor to a
# heading of the Markdown file it names); README.md has at most 250 lines;
# README.md and docs/ name no issue numbers and no dates; every number in
# README.md's Performance table is in the counted report it quotes
# (bench/REPORT-count.md); and the facts
# that have one home in docs/design.md agree with the code they describe:
#  - the state table with the TASKSTATE_* values of the uapi header (and
#    the list in taskstate(4)),
#  - the TASK_* mapping table with ts_state_from_linux() in
#    module/linux-states.h,
#  - the kernel feature flags with module/features.kbuild (and every
#    TS_HAVE_* the module tests is one that file defines);
# and the state and total names have one source, the uapi header's
# TASKSTATE_STATE_NAMES and TASKSTATE_TOTAL_NAMES (each name its
# constant's suffix): no other source file spells a list of them; the
# errnos the header gives the device are those taskstate(4)'s ERRORS
# lists, and each of the header's flags is in taskstate(4); and every
# count the docs, the manual pages and the parameter descriptions give of
# something the code defines (the tracepoints hooked, the ioctl commands,
# the per-state totals, the process walk's chunk and restarts, the
# default max_threads, the example alerts) is the code's count.
# Each check also runs once on a copy broken on purpose, and must fail
# there.  Prints TAP; exits non-zero on any failure.  Needs no root.
#
#   scripts/doc-test.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"
export LC_ALL=C

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

design=$top/docs/design.md
uapi=$top/include/uapi/linux/taskstate.h
states_h=$top/module/linux-states.h
features=$top/module/features.kbuild
for f in "$design" "$uapi" "$states_h" "$features"; do
	[ -f "$f" ] || bail "missing ${f#"$top"/}"
done

# The GitHub anchors of a Markdown file's headings, one a line: lower
# case, punctuation dropped, blanks to hyphens, "-N" on the Nth repeat.
anchors() {	# file.md
	awk '
	/^[ \t]*```/ { code = !code; next }
	code { next }
	/^#+[ \t]/ {
		h = $0
		sub(/^#+[ \t]+/, "", h)
		sub(/[ \t]+#+[ \t]*$/, "", h)
		h = tolower(h)
		gsub(/[^a-z0-9 _-]/, "", h)
		gsub(/ /, "-", h)
		if (h in seen) { print h "-" seen[h]; seen[h]++ }
		else { print h; seen[h] = 1 }
	}' "$1"
}

# The link targets of a Markdown file outside code: "LINE TARGET".
link_targets() {	# file.md
	awk '
	/^[ \t]*```/ { code = !code; next }
	code { next }
	{
		line = $0
		gsub(/`[^`]*`/, "", line)	# code spans
		if (match(line, /^[ \t]*\[[^]]+\]:[ \t]*[^ \t]+/)) {	# [ref]: target
			t = substr(line, RSTART, RLENGTH)
			sub(/^[^]]*\]:[ \t]*/, "", t)
			print NR, t
		}
		while (match(line, /\]\([^) \t]+/)) {
			print NR, substr(line, RSTART + 2, RLENGTH - 2)
			line = substr(line, RSTART + RLENGTH)
		}
	}' "$1"
}

# Every relative link of the files resolves inside ROOT.  Prints one line
# per broken link; returns the number of links checked in $checked.
broken_links() {	# root file...
	local root=$1 f line target path anchor dest
	shift
	checked=0
	for f in "$@"; do
		while read -r line target; do
			case $target in
			[a-zA-Z]*:*) continue ;;	# http:, https:, mailto:
			esac
			checked=$((checked + 1))
			path=${target%%#*}
			anchor=
			[ "$path" = "$target" ] || anchor=${target#*#}
			if [ -z "$path" ]; then
				dest=$f
			else
				dest=$(realpath -m "$(dirname "$f")/$path")
			fi
			case $dest in
			"$root"/*) ;;
			*) echo "${f#"$root"/}:$line: $target: outside the tree"; continue ;;
			esac
			if [ ! -e "$dest" ]; then
				echo "${f#"$root"/}:$line: $target: no ${dest#"$root"/}"
				continue
			fi
			[ -n "$anchor" ] || continue
			case $dest in
			*.md) anchors "$dest" | grep -qxF -- "$anchor" ||
				echo "${f#"$root"/}:$line: $target: no heading #$anchor in ${dest#"$root"/}" ;;
			*) echo "${f#"$root"/}:$line: $target: an anchor into a file that is not Markdown" ;;
			esac
		done < <(link_targets "$f")
	done
}

# "VALUE NAME" of each row of a "| value | name | ... |" table under the
# heading "## States" of a Markdown file.
doc_states() {	# design.md
	awk -F'|' '
	/^## / { in_s = ($0 == "## States") }
	in_s && /^\|[ \t]*[0-9]+[ \t]*\|/ {
		v = $2; n = $3
		gsub(/[ \t`]/, "", v); gsub(/[ \t`]/, "", n)
		print v, n
	}' "$1" | sort
}

# "VALUE NAME" of the uapi header's states.
uapi_states() {	# taskstate.h
	sed -nE 's/^#define TASKSTATE_([A-Z]+)[[:space:]]+([0-7])([[:space:]].*)?$/\2 \1/p' "$1" | sort
}

# "VALUE NAME" of the states taskstate(4) lists: "TASKSTATE_NAME ... (N)".
man_states() {	# taskstate.4
	sed -nE 's/.*TASKSTATE_([A-Z]+)[^A-Z_(]*\(([0-7])\).*/\2 \1/p' "$1" | sort -u
}

states_agree() {	# design.md taskstate.h
	doc_states "$1" > "$tmp/doc-states"
	uapi_states "$2" > "$tmp/uapi-states"
	[ "$(wc -l < "$tmp/uapi-states")" = 8 ] || { echo "the header's states: $(wc -l < "$tmp/uapi-states"), not 8"; return 1; }
	diff "$tmp/uapi-states" "$tmp/doc-states" > "$tmp/states-diff" && return 0
	sed -n 's/^< /only in the header: /p; s/^> /only in the table: /p' "$tmp/states-diff"
	return 1
}

# The mapping of ts_state_from_linux() (its definition, not its
# kernel-doc), one statement a line:
# "TASK_BIT... | STATE..." (the bits it tests, also those a comment names
# for the final return, and the states it returns).
code_mapping() {	# linux-states.h
	awk '
	/^static.*ts_state_from_linux\(/ { inf = 1 }
	inf { body = body " " $0 }
	inf && /^}/ { exit }
	END {
		n = split(body, st, ";")
		for (i = 1; i <= n; i++) {
			s = st[i]; bits = ""; states = ""
			while (match(s, /_*TASK_[A-Z_]+/)) {
				bits = bits " " substr(s, RSTART, RLENGTH)
				s = substr(s, RSTART + RLENGTH)
			}
			s = st[i]
			while (match(s, /TASKSTATE_[A-Z]+/)) {
				states = states " " substr(s, RSTART + 10, RLENGTH - 10)
				s = substr(s, RSTART + RLENGTH)
			}
			if (bits != "" && states != "")
				print bits " |" states
		}
	}' "$1"
}

# The rows of the table under "## How Linux task states map":
# "TASK_BIT... | WORDS OF THE LAST COLUMN".
doc_mapping() {	# design.md
	awk -F'|' '
	/^## / { in_m = ($0 == "## How Linux task states map") }
	in_m && /^\|[ \t]*`/ {
		s = $2; bits = ""
		while (match(s, /_*TASK_[A-Z_]+/)) {
			bits = bits " " substr(s, RSTART, RLENGTH)
			s = substr(s, RSTART + RLENGTH)
		}
		last = $(NF - 1)
		gsub(/[^A-Za-z_]+/, " ", last)
		print bits " | " last
	}' "$1"
}

mapping_agrees() {	# design.md linux-states.h
	local bits states b s rc=0 found
	doc_mapping "$1" > "$tmp/doc-map"
	code_mapping "$2" > "$tmp/code-map"
	[ -s "$tmp/doc-map" ] || { echo "no TASK_* table under \"## How Linux task states map\""; return 1; }
	[ "$(wc -l < "$tmp/code-map")" -ge 5 ] || { echo "cannot read ts_state_from_linux()"; return 1; }
	# A row of the table that maps bit $1 to state $2.
	row() { grep -qE "(^| )$1( .*)? \|.* $2( |\$)" "$tmp/doc-map"; }
	while IFS='|' read -r bits states; do
		bits=$(echo "$bits" | xargs) states=$(echo "$states" | xargs)
		# Each bit has a row that gives one of the statement's states.
		for b in $bits; do
			found=0
			for s in $states; do row "$b" "$s" && found=1; done
			[ $found = 1 ] || { echo "$b: no row that maps it to $states (module/linux-states.h)"; rc=1; }
		done
		# Each state the statement returns is in a row of one of its bits.
		for s in $states; do
			found=0
			for b in $bits; do row "$b" "$s" && found=1; done
			[ $found = 1 ] || { echo "$s: no row of $bits gives it (module/linux-states.h)"; rc=1; }
		done
	done < "$tmp/code-map"
	# Each bit the table names is one the code (or its comments) knows.
	cut -d'|' -f1 "$tmp/doc-map" | tr ' ' '\n' | grep . | sort -u > "$tmp/doc-bits"
	while read -r b; do
		grep -qF -- "$b" "$2" || { echo "$b: in the table, not in module/linux-states.h"; rc=1; }
	done < "$tmp/doc-bits"
	return $rc
}

# "FLAG HEADER" of each ts_have line of features.kbuild.
kbuild_flags() {	# features.kbuild
	sed -nE 's/.*call ts_have,.*,([^,]+),(TS_HAVE_[A-Z0-9_]+)\).*/\2 \1/p' "$1" | sort
}

flags_agree() {	# design.md features.kbuild module-dir
	local flag hdr rc=0
	kbuild_flags "$2" > "$tmp/kbuild-flags"
	awk '/^## / { in_k = ($0 == "## Kernel differences") } in_k' "$1" > "$tmp/kdiff"
	grep -oE 'TS_HAVE_[A-Z0-9_]+' "$tmp/kdiff" | sort -u > "$tmp/doc-flags"
	[ -s "$tmp/kbuild-flags" ] || { echo "no ts_have line in features.kbuild"; return 1; }
	if ! cut -d' ' -f1 "$tmp/kbuild-flags" | diff - "$tmp/doc-flags" > "$tmp/flags-diff"; then
		sed -n 's/^< /only in features.kbuild: /p; s/^> /only in docs: /p' "$tmp/flags-diff"
		rc=1
	fi
	while read -r flag hdr; do
		grep -F -- "$flag" "$tmp/kdiff" | grep -qF -- "$hdr" ||
			{ echo "$flag: its row does not name $hdr"; rc=1; }
	done < "$tmp/kbuild-flags"
	cat "$3"/*.[ch] | grep -oE 'TS_HAVE_[A-Z0-9_]+' | sort -u > "$tmp/used-flags"
	while read -r flag; do
		grep -q "^$flag " "$tmp/kbuild-flags" ||
			{ echo "$flag: used in module/, not defined in features.kbuild"; rc=1; }
	done < "$tmp/used-flags"
	return $rc
}

# --- links ------------------------------------------------------------------
docs=("$top/README.md" "$top/NEWS.md" "$top"/docs/*.md)
for f in "${docs[@]}"; do
	[ -f "$f" ] || { ok 1 "${f#"$top"/} exists"; continue; }
	broken_links "$top" "$f" > "$tmp/broken"
	rc=0
	[ -s "$tmp/broken" ] && { comment < "$tmp/broken"; rc=1; }
	ok $rc "${f#"$top"/}: every relative link resolves ($checked checked)"
done

# The check finds what it must: a missing file, a missing anchor, a link
# out of the tree; and passes a good file link, a good anchor in another
# file, one in the same file, and a directory.
mkdir -p "$tmp/fx/docs/sub"
cat > "$tmp/fx/docs/a.md" <<'EOF'
# A title
[good](b.md#a-heading-with-code-and-punctuation) [self](#a-title) [dir](sub/)
[gone](missing.md) [no anchor](b.md#no-such-heading) [out](../../../etc/passwd)
`[in a code span](missing-too.md)`
```
[in a code block](missing-three.md)
```
EOF
# shellcheck disable=SC2016
printf '## A heading, with `code` and punctuation!\n' > "$tmp/fx/docs/b.md"
broken_links "$tmp/fx" "$tmp/fx/docs/a.md" > "$tmp/fx-broken"
rc=0
[ "$(wc -l < "$tmp/fx-broken")" = 3 ] && [ "$checked" = 6 ] &&
	grep -q 'missing.md' "$tmp/fx-broken" &&
	grep -q '#no-such-heading' "$tmp/fx-broken" &&
	grep -q 'outside the tree' "$tmp/fx-broken" || rc=1
[ $rc = 0 ] || comment < "$tmp/fx-broken"
ok $rc "negative control: the link check reports a missing file, a missing anchor and a link out of the tree, and only those"

# --- size, issue numbers, dates ---------------------------------------------
lines=$(wc -l < "$top/README.md")
[ "$lines" -le 250 ]
ok $? "README.md has at most 250 lines ($lines)"

cd "$top" || bail "cannot cd to $top"
grep -inE 'issue #?[0-9]' README.md docs/*.md > "$tmp/issues"
rc=0
[ -s "$tmp/issues" ] && { comment < "$tmp/issues"; rc=1; }
ok $rc "README.md and docs/ name no issue numbers"

grep -nE '(^|[^0-9])(19|20)[0-9][0-9]-[01][0-9]-[0-3][0-9]([^0-9]|$)' README.md docs/*.md > "$tmp/dates"
rc=0
[ -s "$tmp/dates" ] && { comment < "$tmp/dates"; rc=1; }
ok $rc "README.md and docs/ hold no dates"

# --- the README's Performance table quotes the counted report ---------------
# Each number in the table's cells but the first column's, as the report
# writes it (12,843, +624, 1.049), must be in the report as a whole word
# (1.04 is not found in 1.049, nor 14 in 140): a run of the
# benchmark that moved one shows here until the README follows.
perf_quotes() {		# FILE, REPORT[, HEADING[, COLUMNS]]: prints the numbers not in REPORT
	awk -v h="${3:-## Performance}" \
		'/^#+ /{on = ($0 == h)} on && /^\| / && !/^\|---/' "$1" |
		tail -n +2 | cut -d'|' -f"${4:-3-}" |
		grep -oE '[+-]?[0-9][0-9,]*(\.[0-9]+)?' > "$tmp/perf-nums"
	[ -s "$tmp/perf-nums" ] || { echo "no Performance table"; return 1; }
	local num
	while read -r num; do
		grep -qwF -- "$num" "$2" || echo "$num: not in the report"
	done < "$tmp/perf-nums"
}
# The last column, the BPF backend's, from its own run.
perf_quotes "$top/README.md" "$top/bench/REPORT-count.md" "## Performance" 3-7 > "$tmp/out"
nums=$(wc -l < "$tmp/perf-nums")
perf_quotes "$top/README.md" "$top/bench/REPORT-count-bpf.md" "## Performance" 8 >> "$tmp/out"
rc=0
[ -s "$tmp/out" ] && { comment < "$tmp/out"; rc=1; }
ok $rc "README.md's Performance table quotes bench/REPORT-count.md ($nums numbers) and, its last column, bench/REPORT-count-bpf.md ($(wc -l < "$tmp/perf-nums"))"

sed 's/| 12,843 |/| 12,834 |/; s/+624 (1\.049)/+624 (1.04)/' "$top/README.md" > "$tmp/readme-bad.md"
perf_quotes "$tmp/readme-bad.md" "$top/bench/REPORT-count.md" "## Performance" 3-7 > "$tmp/out"
[ "$(cat "$tmp/out")" = "$(printf '12,834: not in the report\n1.04: not in the report')" ]
ok $? "negative control: a README with a pipe count not the report's, and a ratio cut short, fails on both"

# The memory table's numbers, against the report's memory section only
# (its small numbers are found anywhere else in the report).
awk '/^## /{on = /^## Memory accesses/} on' "$top/bench/REPORT-count.md" \
	> "$tmp/report-mem.md"
perf_quotes "$top/docs/performance.md" "$tmp/report-mem.md" \
	"### Memory accesses and lines" > "$tmp/out"
rc=0
[ -s "$tmp/out" ] && { comment < "$tmp/out"; rc=1; }
ok $rc "docs/performance.md's memory table quotes bench/REPORT-count.md's memory section ($(wc -l < "$tmp/perf-nums") numbers)"

sed 's/^| every thread tracked | 94 | 28 | 15 |/| every thread tracked | 94 | 29 | 15 |/' \
	"$top/docs/performance.md" > "$tmp/perf-bad.md"
perf_quotes "$tmp/perf-bad.md" "$tmp/report-mem.md" \
	"### Memory accesses and lines" > "$tmp/out"
[ "$(cat "$tmp/out")" = "29: not in the report" ]
ok $? "negative control: a memory table with a store count not the report's fails"

# --- one home for the state names, the mapping and the feature flags ---------
states_agree "$design" "$uapi" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "docs/design.md's state table has the uapi header's values and names: $(cut -d' ' -f2 "$tmp/uapi-states" | tr '\n' ' ')"

man_states "$top/man/taskstate.4" > "$tmp/man-states"
diff "$tmp/uapi-states" "$tmp/man-states" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "taskstate(4) lists the uapi header's states with their values"

sed 's/^| 3 | SLEEPING |/| 3 | ASLEEP |/' "$design" > "$tmp/design-bad.md"
! states_agree "$tmp/design-bad.md" "$uapi" > "$tmp/out" &&
	grep -q 'only in the table: 3 ASLEEP' "$tmp/out"
ok $? "negative control: a state table with a renamed state fails"

mapping_agrees "$design" "$states_h" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "docs/design.md's TASK_* table maps each bit as module/linux-states.h does ($(wc -l < "$tmp/code-map") tests)"

# shellcheck disable=SC2016
sed -E 's/^(\| `TASK_PARKED` \|[^|]*\|) SLEEPING \|/\1 BLOCKED |/' "$design" > "$tmp/design-bad.md"
! mapping_agrees "$tmp/design-bad.md" "$states_h" > "$tmp/out" &&
	grep -q '^TASK_PARKED: ' "$tmp/out"
ok $? "negative control: a TASK_* table that maps TASK_PARKED to BLOCKED fails"

flags_agree "$design" "$features" "$top/module" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "docs/design.md's feature flags are module/features.kbuild's: $(cut -d' ' -f1 "$tmp/kbuild-flags" | tr '\n' ' ')"

# shellcheck disable=SC2016
{ cat "$features"; echo 'ccflags-y += $(call ts_have,new_thing,linux/sched.h,TS_HAVE_NEW_THING)'; } > "$tmp/features-bad"
! flags_agree "$design" "$tmp/features-bad" "$top/module" > "$tmp/out" &&
	grep -q 'only in features.kbuild: TS_HAVE_NEW_THING' "$tmp/out"
ok $? "negative control: a flag features.kbuild defines and the docs lack fails"

# --- one source for the state and total names ------------------------------
# "CONSTANT NAME" of the header's TASKSTATE_STATE_NAMES and
# TASKSTATE_TOTAL_NAMES initializers.
uapi_names() {	# taskstate.h
	awk '/^#define TASKSTATE_(STATE|TOTAL)_NAMES[ \t]/ { on = 1 }
	     on { print } on && /^}/ { on = 0 }' "$1" |
		grep -oE '\[TASKSTATE_[A-Z_]+\] = "[^"]*"' |
		sed -E 's/^\[TASKSTATE_([A-Z_]+)\] = "([^"]*)"$/\1 \2/'
}

names_agree() {	# taskstate.h
	local c name rc=0
	uapi_names "$1" > "$tmp/names"
	[ "$(grep -vc '^TOTAL_' "$tmp/names")" = 8 ] &&
		[ "$(grep -c '^TOTAL_' "$tmp/names")" = 5 ] ||
		{ echo "not 8 state names and 5 total names"; rc=1; }
	while read -r c name; do
		[ "${c#TOTAL_}" = "$name" ] || { echo "TASKSTATE_$c is named \"$name\""; rc=1; }
	done < "$tmp/names"
	return $rc
}

# Source lines, outside comments, that spell two state or total names
# (any case) or name a TASKSTATE_* constant's string: a second list.
second_lists() {	# file...
	local f
	for f in "$@"; do
		sed -E 's|//.*$||; s|/\*.*\*/||g; /^[[:space:]]*(\/?\*)/d' "$f" |
			grep -inE -e '"(none|running|runnable|sleeping|blocked|stopped|traced|dead|other)"[^"]{0,40}"(none|running|runnable|sleeping|blocked|stopped|traced|dead|other)"' \
				  -e '\[TASKSTATE_[A-Z_]+\][[:space:]]*=[[:space:]]*"' |
			sed "s|^|${f#"$top"/}:|"
	done
}

names_agree "$uapi" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "the uapi header names each state and total as its constant: $(cut -d' ' -f2 "$tmp/names" | tr '\n' ' ')"

sed 's/\[TASKSTATE_SLEEPING\] = "SLEEPING"/[TASKSTATE_SLEEPING] = "ASLEEP"/' "$uapi" > "$tmp/uapi-bad.h"
! names_agree "$tmp/uapi-bad.h" > "$tmp/out" && grep -q 'TASKSTATE_SLEEPING is named "ASLEEP"' "$tmp/out"
ok $? "negative control: a header whose SLEEPING is named ASLEEP fails"

# (This script is left out: it holds the negative control's list.)
mapfile -t srcs < <(find "$top" \( -name .git -o -name build \) -prune -o -type f \
			 \( -name '*.[ch]' -o -name '*.py' -o -name '*.bt' -o -name '*.sh' \) \
			 ! -path "$uapi" ! -path "$top/scripts/doc-test.sh" -print | sort)
second_lists "${srcs[@]}" > "$tmp/out"
rc=0
[ ${#srcs[@]} -gt 50 ] || rc=1
[ -s "$tmp/out" ] && { comment < "$tmp/out"; rc=1; }
ok $rc "no source but the uapi header spells the state or total names (${#srcs[@]} files)"

printf '%s\n' 'static const char *const n[] = {' '	"NONE", "RUNNING",' '};' \
	'	[TASKSTATE_TOTAL_OTHER] = "other",' '/* "running", "runnable" in a comment */' \
	'	printf("%s\n", "blocked");' > "$tmp/second.c"
second_lists "$tmp/second.c" > "$tmp/out"
[ "$(wc -l < "$tmp/out")" = 2 ] && grep -q ':2:' "$tmp/out" && grep -q ':4:' "$tmp/out"
ok $? "negative control: a list of names and a TASKSTATE_* name are found, a comment and one name are not"

# --- errors and flags: the header, and taskstate(4) ---------------------------
# The errno names of the header's comments, and of taskstate(4)'s ERRORS
# tags (up to the paragraph on loading the module).
uapi_errnos() {	# taskstate.h
	grep -oE '\bE[A-Z0-9]{3,}\b' "$1" | sort -u
}
man_errnos() {	# taskstate.4
	awk '/^\.SH ERRORS/ { on = 1; next } /^\.SH/ || /^\.PP/ { on = 0 }
	     on && tag && /^\.B E[A-Z0-9]+$/ { print $2 } { tag = /^\.TP/ }' "$1" | sort -u
}
errnos_agree() {	# taskstate.h taskstate.4
	uapi_errnos "$1" > "$tmp/uapi-errnos"
	man_errnos "$2" > "$tmp/man-errnos"
	[ "$(wc -l < "$tmp/uapi-errnos")" -ge 8 ] || { echo "too few errnos in the header"; return 1; }
	diff "$tmp/uapi-errnos" "$tmp/man-errnos" > "$tmp/errnos-diff" && return 0
	sed -n 's/^< /only in the header: /p; s/^> /only in taskstate(4): /p' "$tmp/errnos-diff"
	return 1
}
# The header's flags (TASKSTATE_* defined as a bit) missing from the page.
flags_missing() {	# taskstate.h taskstate.4
	local flag
	sed -nE 's/^#define (TASKSTATE_[A-Z0-9_]+)[[:space:]]+\(1U << [0-9]+\).*/\1/p' "$1" |
		while read -r flag; do
			grep -qF -- "$flag" "$2" || echo "$flag: not in taskstate(4)"
		done
}

errnos_agree "$uapi" "$top/man/taskstate.4" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "the errnos the uapi header gives are taskstate(4)'s ERRORS: $(tr '\n' ' ' < "$tmp/uapi-errnos")"

sed 's/\[ENODEV\]/[ENXIO]/' "$uapi" > "$tmp/uapi-bad.h"
! errnos_agree "$tmp/uapi-bad.h" "$top/man/taskstate.4" > "$tmp/out" &&
	grep -q 'only in the header: ENXIO' "$tmp/out" && grep -q 'only in taskstate(4): ENODEV' "$tmp/out"
ok $? "negative control: a header whose mmap() fails with ENXIO instead of ENODEV fails"

flags_missing "$uapi" "$top/man/taskstate.4" > "$tmp/out"
rc=0
[ -s "$tmp/out" ] && { comment < "$tmp/out"; rc=1; }
nflags=$(grep -cE '^#define TASKSTATE_[A-Z0-9_]+[[:space:]]+\(1U << ' "$uapi")
[ "$nflags" -ge 2 ] || rc=1
ok $rc "taskstate(4) names each of the uapi header's $nflags flags"

{ cat "$uapi"; echo '#define TASKSTATE_TRACK_NEW	(1U << 1)'; } > "$tmp/uapi-bad.h"
[ "$(flags_missing "$tmp/uapi-bad.h" "$top/man/taskstate.4")" = "TASKSTATE_TRACK_NEW: not in taskstate(4)" ]
ok $? "negative control: a flag the header adds and taskstate(4) lacks fails"

# --- counts: every number the docs give of a thing the code defines ----------
# A count as digits: "Seven" -> 7, "32,768" -> 32768.
count_num() {	# word
	local w
	w=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | tr -d ,)
	case $w in
	one) w=1 ;; two) w=2 ;; three) w=3 ;; four) w=4 ;; five) w=5 ;;
	six) w=6 ;; seven) w=7 ;; eight) w=8 ;; nine) w=9 ;; ten) w=10 ;;
	eleven) w=11 ;; twelve) w=12 ;;
	esac
	printf '%s\n' "$w"
}
count_re='([0-9][0-9,]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)'

# What the code says, in the tree at ROOT.
code_tracepoints() {	# root: the entries of ts_tps[] in module/probes.c
	awk '/^} ts_tps\[\] = \{/ { on = 1; next } on && /^};/ { exit }
	     on && /^[ \t]*\{ "[a-z_]+",/ { n++ } END { print n + 0 }' "$1/module/probes.c"
}
code_ioctls() {		# root: the TASKSTATE_IOC_* commands of the uapi header
	grep -cE '^#define TASKSTATE_IOC_[A-Z_]+[[:space:]]+_IO' "$1/include/uapi/linux/taskstate.h"
}
code_totals() {		# root: the names of TASKSTATE_TOTAL_NAMES
	uapi_names "$1/include/uapi/linux/taskstate.h" | grep -c '^TOTAL_'
}
code_proc_chunk() {	# root
	sed -nE 's/^#define TS_PROC_CHUNK[[:space:]]+([0-9]+)$/\1/p' "$1/module/table.c"
}
code_proc_tries() {	# root
	sed -nE 's/^#define TS_PROC_TRIES[[:space:]]+([0-9]+)$/\1/p' "$1/module/table.c"
}
code_max_threads() {	# root: max_threads' initial value in module/main.c
	sed -nE 's/^static unsigned int max_threads = ([0-9]+);$/\1/p' "$1/module/main.c"
}
code_alerts() {		# root: the alerts of the example rules
	grep -cE '^[[:space:]]*- alert:' "$1/examples/taskstate.rules.yml"
}

# What a reader reads: docs/, the README, the manual pages, and the
# module's parameter descriptions (the lines of MODULE_PARM_DESC).
count_texts() {		# root
	local f
	for f in "$1"/README.md "$1"/docs/*.md "$1"/man/*.[0-9] "$1"/man/man3/*.3; do
		[ -f "$f" ] || continue
		echo "== ${f#"$1"/}"
		sed 's/\\f[BIRP]//g' "$f"
	done
	for f in "$1"/module/*.c; do
		echo "== ${f#"$1"/}"
		awk '/MODULE_PARM_DESC\(/ { on = 1 } on { print } on && /\);/ { on = 0 }' "$f"
	done
}

# "FILE: PHRASE" for each phrase of the texts that matches ERE (its
# number the first word of $count_re in it after "default", if it says
# "default"), each file read as one line
# so that a phrase broken across lines is found too.
doc_counts() {		# root ere
	count_texts "$1" | awk '/^== / { if (f) print f "\t" t; f = substr($0, 4); t = ""; next }
		{ t = t " " $0 } END { if (f) print f "\t" t }' |
		while IFS=$'\t' read -r f text; do
			printf '%s\n' "$text" | tr -s ' \t' '  ' | grep -oiE -- "$2" |
				sed "s|^|$f: |"
		done
}

# The facts: NAME, the function that counts it in the code, the phrases
# that give it in the text.  A phrase for each: "N (scheduler )tracepoints"
# is every count of tracepoints, wherever it is written.
count_facts=(
	"tracepoints hooked|code_tracepoints|\\b$count_re (scheduler )?tracepoints\\b"
	"ioctl commands|code_ioctls|\\b$count_re (ioctl )?commands\\b"
	"per-state totals|code_totals|\\b$count_re per-state totals\\b"
	"threads a process walk takes a hold|code_proc_chunk|\\bchunks of $count_re\\b"
	"restarts of a process walk|code_proc_tries|\\bafter $count_re restarts\\b"
	"default max_threads|code_max_threads|\\bthreads [^;]{0,40}\\(default $count_re\\b|\\bdefault $count_re (threads|holds)\\b"
	"example alerts|code_alerts|\\b$count_re alerts\\b"
)

# One line per count the text gives wrong ("FILE: PHRASE: the code says
# N"), and one per fact the text never counts; $count_phrases says how
# many phrases were checked.
counts_agree() {	# root
	local fact name fn ere want phrase got rc=0 found
	count_phrases=0
	for fact in "${count_facts[@]}"; do
		IFS='|' read -r name fn ere <<< "$fact"
		want=$("$fn" "$1")
		[ -n "$want" ] && [ "$want" -gt 0 ] ||
			{ echo "$name: cannot count them in the code ($fn)"; rc=1; continue; }
		found=0
		while IFS= read -r phrase; do
			found=$((found + 1))
			got=${phrase#*: }
			got=$(count_num "$(printf '%s\n' "${got#*default }" | grep -oiwE "$count_re" | head -1)")
			[ "$got" = "$want" ] ||
				{ echo "$phrase: the code has $want $name ($fn)"; rc=1; }
		done < <(doc_counts "$1" "$ere")
		[ $found -gt 0 ] || { echo "$name: no count of them in the docs"; rc=1; }
		count_phrases=$((count_phrases + found))
	done
	return $rc
}

counts_agree "$top" > "$tmp/out"
rc=$?
comment < "$tmp/out"
ok $rc "each count docs/, the README, the manual pages and the parameter descriptions give of ${#count_facts[@]} things the code defines (tracepoints, ioctl commands, totals...) is the code's ($count_phrases phrases)"

# A tree whose code hooks one more tracepoint, and whose docs say six
# commands and four per-state totals, the last broken across a line.
mkdir -p "$tmp/cx"
cp -r "$top/README.md" "$top/docs" "$top/man" "$top/module" "$top/include" \
	"$top/examples" "$tmp/cx/"
sed -i 's/^\t{ "sched_switch",\tts_probe_switch },$/&\n\t{ "sched_waking",\tts_probe_wakeup },/' \
	"$tmp/cx/module/probes.c"
sed -i -E 's/^(Six|Seven|Eight) commands on one type letter/Six commands on one type letter/; s/ and five per-state totals\./ and four per-state\ntotals./' \
	"$tmp/cx/docs/abi.md"
counts_agree "$tmp/cx" > "$tmp/out"
rc=$?
[ $rc != 0 ] &&
	grep -q 'tracepoints: the code has 8 tracepoints hooked' "$tmp/out" &&
	! grep -q 'tracepoints: the code has 7 ' "$tmp/out" &&
	grep -q 'docs/abi.md: Six commands: the code has 8 ioctl commands' "$tmp/out" &&
	grep -q 'docs/abi.md: four per-state totals: the code has 5 per-state totals' "$tmp/out" &&
	[ "$(grep -vc 'tracepoints hooked\|ioctl commands\|per-state totals' "$tmp/out")" = 0 ]
rc=$?
[ $rc = 0 ] || comment < "$tmp/out"
ok $rc "negative control: an eighth tracepoint in probes.c, six commands and four per-state totals (across a line break) in abi.md fail, and only those"

tap_done doc-test
