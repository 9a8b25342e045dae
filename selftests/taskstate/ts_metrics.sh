#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# taskstate metrics through a real Prometheus pipeline, in a guest that
# shares the host's root (run_vm.sh, module loaded):
#  - written as taskstate-metrics.service runs it: an unprivileged user
#    with CAP_PERFMON alone, under umask 077; the file is mode 0644, and
#    without the capability the command sees only the user's own
#    processes, saying so (refused while unprivileged opens are off);
#  - `promtool check metrics` accepts it, though a process in it has a
#    thread name with escape sequences and bytes that are not UTF-8;
#  - a real prometheus-node-exporter, its textfile collector on the file's
#    directory, serves the series over HTTP (127.0.0.1), with the hostile
#    name's label as U+FFFD; and the negative control: one raw byte that
#    is not UTF-8 in a file makes node_exporter drop that whole file, and
#    promtool reject it;
#  - examples/: the alert rules pass `promtool check rules` and their unit
#    test, the Grafana dashboard is JSON.
# node_exporter is always stopped (trap).  Prints TAP lines; SKIP (exit 4)
# if the Prometheus tools are not installed.
#
#   TS_BIN=DIR sh ts_metrics.sh
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
cli=${TS_BIN:?TS_BIN names the directory of the taskstate command}/taskstate
port=${TS_METRICS_PORT:-19134}
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n ts_metrics: $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n ts_metrics: $*"; }
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }

for t in promtool prometheus-node-exporter curl setpriv python3; do
	if ! command -v $t > /dev/null; then
		echo "ok 1 ts_metrics # SKIP $t is not installed (make deps)"
		exit 4
	fi
done

dir=$(mktemp -d /tmp/ts_metrics.XXXXXX)
chmod 755 "$dir"
sleeper=
exporter=
cleanup() {
	[ -z "$exporter" ] || { kill "$exporter" 2>/dev/null; wait "$exporter" 2>/dev/null; }
	[ -z "$sleeper" ] || { kill "$sleeper" 2>/dev/null; wait "$sleeper" 2>/dev/null; }
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A process whose name clears the screen and is not UTF-8 (only a
# thread itself may write its comm), asleep on a FIFO, tracked.
mkfifo "$dir/fifo"
sh -c 'printf "x\033[2J\377\376y" > /proc/self/comm && read x < "$0"' "$dir/fifo" &
sleeper=$!
i=0
while [ $i -lt 100 ] && [ "$(od -An -c /proc/$sleeper/comm | tr -d ' ')" != 'x033[2J377376y\n' ]; do
	sleep 0.1
	i=$((i + 1))
done
"$cli" track -p $sleeper > /dev/null || not_ok "track the hostile process"
# Its label as it must come out: U+FFFD for each control and stray byte.
fffd=$(printf '\357\277\275')
label="x${fffd}[2J${fffd}${fffd}y"

# The textfile directory, owned by the unprivileged user as a service's
# StateDirectory= is.
mkdir "$dir/textfile"
chown 65534:65534 "$dir/textfile"
prom=$dir/textfile/taskstate.prom
as_service() {	# extra setpriv options, then the command's arguments
	(umask 077 && setpriv --reuid=65534 --regid=65534 --clear-groups \
		--no-new-privs "$@")
}
# The BPF backend (no device, its pins there: bpf_vm.sh) is root's: the
# file is written by root, no scoped descriptor to check.
bpf=0
[ ! -e /dev/taskstate ] && [ -d /sys/fs/bpf/taskstate ] && bpf=1
# Without CAP_PERFMON: a descriptor scoped to the user's own processes
# (the root-tracked sleeper is not among them), saying so; refused, saying
# so, while the administrator has turned unprivileged opens off.
if [ $bpf = 1 ]; then
	n=$((n + 1))
	echo "ok $n ts_metrics: without CAP_PERFMON # SKIP the BPF backend has no scoped descriptor"
elif [ "$(cat /sys/module/taskstate/parameters/unprivileged)" = Y ]; then
	check "without CAP_PERFMON: its own processes only, with a warning" sh -c '
		as() { setpriv --reuid=65534 --regid=65534 --clear-groups \
			--no-new-privs "$@"; }
		as "$1" metrics --output "$2" 2> "$3" &&
		grep -q "only your own processes" "$3" &&
		grep -q "^taskstate_tracked_threads " "$2" &&
		! grep -q "pid=\"$4\"" "$2"' sh "$cli" "$prom" "$dir/err" "$sleeper"
	rm -f "$prom"
elif as_service "$cli" metrics --output "$prom" 2> "$dir/err"; then
	not_ok "unprivileged opens off: an unprivileged user is refused (it was not)"
else
	check "unprivileged opens off: refused, saying so" grep -q CAP_PERFMON "$dir/err"
fi
if [ $bpf = 1 ]; then
	check "as root (the BPF backend's pins are root's), umask 077: metrics --output writes the file" \
		sh -c 'umask 077 && "$1" metrics --output "$2"' sh "$cli" "$prom"
else
	check "with CAP_PERFMON alone, umask 077: metrics --output writes the file" \
		as_service --inh-caps=+perfmon --ambient-caps=+perfmon \
		"$cli" metrics --output "$prom"
fi
check "the file is mode 0644 (node_exporter's user reads it)" \
	test "$(stat -c %a "$prom" 2>/dev/null)" = 644
check "no temporary file left" \
	test "$(ls "$dir/textfile")" = taskstate.prom

if promtool check metrics < "$prom" > "$dir/promtool.out" 2>&1; then
	ok "promtool check metrics accepts the file"
else
	sed 's/^/# /' "$dir/promtool.out"
	not_ok "promtool check metrics accepts the file"
fi
check "the hostile name is a valid UTF-8 label" \
	grep -qF "taskstate_threads{pid=\"$sleeper\",comm=\"$label\",state=\"sleeping\"} 1" "$prom"

# node_exporter, its textfile collector alone, on loopback.
ip link set lo up 2>/dev/null
prometheus-node-exporter --web.listen-address=127.0.0.1:$port \
	--collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$dir/textfile" > "$dir/exporter.log" 2>&1 &
exporter=$!
scrape() {	# output file: waits up to 30 s for the exporter to answer
	i=0
	while [ $i -lt 60 ]; do
		curl -sf "http://127.0.0.1:$port/metrics" > "$1" && return 0
		kill -0 "$exporter" 2>/dev/null || return 1
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}
if scrape "$dir/scrape"; then
	ok "node_exporter serves over HTTP on 127.0.0.1:$port"
else
	sed 's/^/# /' "$dir/exporter.log"
	not_ok "node_exporter serves over HTTP on 127.0.0.1:$port"
fi
check "node_exporter read the file without error" \
	grep -qx 'node_textfile_scrape_error 0' "$dir/scrape"
# node_exporter sorts the labels.
check "node_exporter serves the hostile process's series" \
	grep -qF "taskstate_threads{comm=\"$label\",pid=\"$sleeper\",state=\"sleeping\"} 1" "$dir/scrape"
check "node_exporter serves the health series" \
	grep -qE '^taskstate_tracked_threads [1-9]' "$dir/scrape"
check "node_exporter serves every state of the process, 0 included" \
	test "$(grep -cF "taskstate_threads{comm=\"$label\",pid=\"$sleeper\"," "$dir/scrape")" = 7

# The negative control: a raw 0xff in a label value.
printf 'taskstate_threads{comm="x\377"} 1\n' > "$dir/textfile/bad.prom"
check "promtool rejects a label that is not UTF-8 (control)" \
	sh -c '! promtool check metrics < "$0" > /dev/null 2>&1' "$dir/textfile/bad.prom"
if scrape "$dir/scrape2"; then
	check "node_exporter reports the bad file (control)" \
		grep -qx 'node_textfile_scrape_error 1' "$dir/scrape2"
else
	not_ok "node_exporter reports the bad file (control): no answer"
fi

# examples/
check "examples/taskstate.rules.yml: promtool check rules" \
	sh -c 'promtool check rules "$0" > /dev/null' "$top/examples/taskstate.rules.yml"
check "examples/taskstate.rules.test.yml: the alerts fire as expected" \
	sh -c 'cd "$0" && promtool test rules taskstate.rules.test.yml > /dev/null' "$top/examples"
check "examples/taskstate-dashboard.json is JSON" \
	sh -c 'python3 -m json.tool "$0" > /dev/null' "$top/examples/taskstate-dashboard.json"

echo "# ts_metrics: $((n - failed)) passed, $failed failed"
[ $failed = 0 ]
