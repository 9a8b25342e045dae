#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages on the host, as a user gets them: `make deb`
# (scripts/build-deb.sh, with lintian: no error, no warning), then
# `apt-get install ./*.deb` of the four packages, which makes DKMS build
# and install the module for every kernel with headers in /lib/modules
# (at least Debian's 6.1 amd64 kernel and backports' 6.12); checks of the
# installed files, modules and library (exports, soname, a program built
# with pkg-config); `apt-get purge`; and checks that nothing is left: no
# file of the packages, no module, no DKMS registration, no other new file
# under /usr/src, /var/lib/dkms, /lib/modules, /etc.  The systemd units
# pass `systemd-analyze verify`.  Prints TAP; exits
# non-zero on any failure.
#
#   scripts/deb-test.sh          (root; make check runs it, HOST_TESTS)
#
# For the VM smoke test (run_vm.sh's "deb" section, in the boots of
# scripts/check.sh) it keeps, under build/deb/vm/KVER/, a copy of the
# module DKMS built for each of those two kernels with its build-id note,
# and under build/deb/vm/root/ the packaged command and library.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/deb
vm=$out/vm
name=taskstate
pkgs=(taskstate-dkms taskstate-tools libtaskstate0 libtaskstate-dev)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
# shellcheck source=lib.sh
. "$top/scripts/lib.sh"

[ "$(id -u)" = 0 ] || bail "must run as root (apt-get, dkms)"
for t in apt-get dkms dpkg-buildpackage dh_dkms lintian pkg-config systemd-analyze; do
	command -v "$t" >/dev/null || bail "$t is missing (run make deps)"
done
ver=$(sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$top/dkms.conf")
[ -n "$ver" ] || bail "no PACKAGE_VERSION in dkms.conf"
k61=$("$top/scripts/kernels.sh" amd64) || bail "no 6.1 amd64 kernel (run make deps)"
k612=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
       sed -n 's/^linux-headers-\(6\.12\.[^ ]*[0-9]-amd64\) .* ok installed$/\1/p' |
       sort -V | tail -n1)
# bookworm-backports' 6.12 headers when installed (make check with an
# amd64-6.12 kernel or dkms-test installs them): a second kernel series.
kvers=("$k61")
if [ -n "$k612" ]; then
	kvers+=("$k612")
else
	echo "# no 6.12 amd64 headers installed: DKMS checked on $k61 alone"
fi

ts_lock "$TS_SYSTEM_LOCK"
tmp=$(mktemp -d)
export DEBIAN_FRONTEND=noninteractive
# Waiting, as for TS_SYSTEM_LOCK, for another apt user of the machine.
apt_q() { apt-get -y -q -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600 "$@"; }
installed() { dpkg-query -W -f='${db:Status-Status}\n' "$1" 2>/dev/null | grep -qx installed; }

# Whatever an earlier, interrupted run left; and the same at exit.
purge_all() {
	local p stale=()
	for p in "${pkgs[@]}"; do
		# Anything but "not installed, no config files" (un).
		dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.[^n]' &&
			stale+=("$p")
	done
	[ ${#stale[@]} = 0 ] || apt_q purge "${stale[@]}" >> "$tmp/cleanup.log" 2>&1
}
cleanup() {
	purge_all
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
purge_all
if [ -n "$(dkms status "$name/$ver" 2>/dev/null)" ]; then
	echo "# removing $name/$ver left in DKMS by an earlier run"
	dkms remove "$name/$ver" --all >/dev/null 2>&1
fi
rm -rf "$vm"

# Everything below these before the install, to compare after the purge.
# The kernels' module indexes (modules.dep...) are rewritten by depmod:
# only their taskstate entries are checked.  DKMS makes its signing key
# (/var/lib/dkms/mok.*) at its first build on a machine, and keeps it.
snapshot() {
	find /usr/src /var/lib/dkms /lib/modules /etc /usr/include \
	     "/usr/lib/$ma" /usr/bin /usr/share/man /usr/share/doc \
	     -path '/etc/ld.so.cache' -prune -o \
	     -path '/var/lib/dkms/mok.*' -prune -o \
	     -path '/lib/modules/*/modules.*' -prune -o -print 2>/dev/null | sort
}

echo "# $name $ver: packages on ${kvers[*]} (and every other kernel with headers)"
start=$(date +%s)

# --- build --------------------------------------------------------------
t0=$(date +%s)
"$top/scripts/build-deb.sh" --no-lintian "$out" > "$tmp/build.log" 2>&1
rc=$?
debs=()
for p in "${pkgs[@]}"; do
	f=$(find "$out" -maxdepth 1 -name "${p}_${ver}_*.deb" | head -n1)
	if [ -n "$f" ]; then debs+=("$f"); else echo "# no $p .deb"; rc=1; fi
done
[ $rc = 0 ] || comment < "$tmp/build.log"
ok $rc "make deb: ${pkgs[*]} built ($(( $(date +%s) - t0 )) s)"
[ $rc = 0 ] || exit 1

t0=$(date +%s)
# Info and pedantic tags shown too (and counted), but only errors and
# warnings fail.
lintian --fail-on error,warning --display-info --pedantic "$out"/*.changes \
	> "$tmp/lintian.log" 2>&1
rc=$?
grep -v 'running with root privileges' "$tmp/lintian.log" | comment
ok $rc "lintian: no error, no warning ($(grep -c '^I: ' "$tmp/lintian.log") info, $(grep -c '^P: ' "$tmp/lintian.log") pedantic tags; $(( $(date +%s) - t0 )) s)"

# --- install --------------------------------------------------------------
snapshot > "$tmp/before"
t0=$(date +%s)
apt_q install "${debs[@]}" > "$tmp/install.log" 2>&1
rc=$?
for p in "${pkgs[@]}"; do
	installed "$p" || { echo "# $p not installed"; rc=1; }
done
[ $rc = 0 ] || tail -n 40 "$tmp/install.log" | comment
grep -E '^(Building for|Building initial module|Module build|Skipped|Done)' "$tmp/install.log" | comment
ok $rc "apt-get install ./*.deb ($(( $(date +%s) - t0 )) s, with the DKMS builds)"

dkms status "$name/$ver" 2>/dev/null | comment
for k in "${kvers[@]}"; do
	dkms status "$name/$ver" -k "$k" 2>/dev/null | grep -q ': installed'
	ok $? "$k: dkms built and installed $name/$ver"

	ko=$(find "/lib/modules/$k/updates/dkms" -maxdepth 1 -name "$name.ko*" 2>/dev/null | head -n1)
	vm_=$(modinfo -F vermagic "${ko:-/nonexistent}" 2>/dev/null)
	[ -n "$ko" ] && [ "${vm_%% *}" = "$k" ] &&
		[ "$(readlink -f "$(modinfo -k "$k" -F filename "$name" 2>/dev/null)")" = "$(readlink -f "$ko")" ]
	ok $? "$k: ${ko:-no module} (vermagic '$vm_'), indexed by depmod"

	# For the VM: the module and its build-id, which the loaded module's
	# /sys/module/taskstate/notes/.note.gnu.build-id must equal.
	if [ -n "$ko" ]; then
		mkdir -p "$vm/$k"
		case $ko in
		*.xz) xz -dc "$ko" > "$vm/$k/$name.ko" ;;
		*) cp "$ko" "$vm/$k/$name.ko" ;;
		esac
		objcopy -O binary --only-section=.note.gnu.build-id \
			"$vm/$k/$name.ko" "$vm/$k/build-id.note"
	fi
done

# The files, and the command and library working.
rc=0
for f in /usr/bin/taskstate "/usr/lib/$ma/libtaskstate.so.0" "/usr/lib/$ma/libtaskstate.so" \
	 "/usr/lib/$ma/libtaskstate.a" "/usr/lib/$ma/pkgconfig/libtaskstate.pc" \
	 /usr/include/libtaskstate.h /usr/include/linux/taskstate.h \
	 "/usr/src/$name-$ver/dkms.conf" "/usr/src/$name-$ver/Kbuild"; do
	[ -e "$f" ] || { echo "# missing: $f"; rc=1; }
done
cmp -s /usr/include/linux/taskstate.h "$top/include/uapi/linux/taskstate.h" ||
	{ echo "# /usr/include/linux/taskstate.h differs from the tree's"; rc=1; }
ok $rc "installed: command, library, headers, pkg-config file, DKMS source"

# (ldd may name /lib/$ma: merged /usr; compare real paths.)
v=$(taskstate --version 2>&1)
so=$(ldd /usr/bin/taskstate | awk '$1 == "libtaskstate.so.0" { print $3 }')
[ "$v" = "taskstate $ver" ] && [ -n "$so" ] &&
	[ "$(readlink -f "$so")" = "$(readlink -f "/usr/lib/$ma/libtaskstate.so.0")" ]
ok $? "taskstate --version says '$v', runs with /usr/lib/$ma/libtaskstate.so.0 (ldd: ${so:-not found})"

man -w 1 taskstate > "$tmp/man" 2>&1 && man -w 4 taskstate >> "$tmp/man" 2>&1
rc=$?
comment < "$tmp/man"
ok $rc "man 1 taskstate and man 4 taskstate installed"

# Every function of the library has its page in section 3 (libtaskstate-dev).
rc=0 n3=0
for f in "$top"/man/man3/*.3; do
	p=${f##*/}
	man -w 3 "${p%.3}" > /dev/null 2>&1 || { echo "# no man 3 ${p%.3}"; rc=1; }
	n3=$((n3 + 1))
done
[ $n3 -gt 0 ] || rc=1
ok $rc "man 3: the $n3 pages of the library's functions installed"

# The systemd units: where Debian puts them, clean for systemd-analyze,
# the timer enabled and the service left to it; the module's boot files
# there and commented out (opt-in); the bash completion.
units=(/lib/systemd/system/taskstate-metrics.service /lib/systemd/system/taskstate-metrics.timer)
rc=0
for f in "${units[@]}" /etc/modules-load.d/taskstate.conf /etc/modprobe.d/taskstate.conf \
	 /usr/share/bash-completion/completions/taskstate; do
	[ -f "$f" ] || { echo "# missing: $f"; rc=1; }
done
ok $rc "installed: ${units[*]##*/}, modules-load.d and modprobe.d files, bash completion"

# systemd-analyze prints nothing for a clean unit (it exits 1 where
# no systemd runs as PID 1, for its own default targets: not ours).
systemd-analyze verify "${units[@]}" > "$tmp/verify" 2>&1
grep -v -e 'Unit sysinit.target not found' -e 'Unit default.target not found' \
	"$tmp/verify" > "$tmp/verify.ours"
comment < "$tmp/verify"
# The control: a misspelt key in a copy of the service is reported.
sed 's/^NoNewPrivileges=/NoNewPrivilegs=/' "${units[0]}" > "$tmp/taskstate-control.service"
systemd-analyze verify "$tmp/taskstate-control.service" 2>&1 |
	grep -q "Unknown key 'NoNewPrivilegs'"
control=$?
[ ! -s "$tmp/verify.ours" ] && [ $control = 0 ]
ok $? "systemd-analyze verify: the service and the timer are clean (and a misspelt key is reported)"

rc=0
grep -qx 'ExecStart=/usr/bin/taskstate metrics --output /var/lib/taskstate/taskstate.prom' "${units[0]}" &&
	grep -qx 'ExecStartPost=+/bin/mv -f /var/lib/taskstate/taskstate.prom /var/lib/prometheus/node-exporter/taskstate.prom' "${units[0]}" &&
	grep -qx 'DynamicUser=yes' "${units[0]}" &&
	grep -qx 'AmbientCapabilities=CAP_PERFMON' "${units[0]}" &&
	grep -qx 'CapabilityBoundingSet=CAP_PERFMON' "${units[0]}" || rc=1
# The command line the service runs is one the command takes.
taskstate metrics --output /dev/null --help > /dev/null || rc=1
ok $rc "taskstate-metrics.service: DynamicUser, CAP_PERFMON alone, writes the textfile collector's taskstate.prom"

[ -L /etc/systemd/system/timers.target.wants/taskstate-metrics.timer ] &&
	! grep -rqs taskstate-metrics.service /etc/systemd/system/*.wants/
ok $? "the timer is enabled, the service is not (the timer runs it)"

! grep -qvE '^(#|$)' /etc/modules-load.d/taskstate.conf &&
	grep -qx '#taskstate' /etc/modules-load.d/taskstate.conf &&
	! grep -qvE '^(#|$)' /etc/modprobe.d/taskstate.conf &&
	grep -qE '^#options taskstate ' /etc/modprobe.d/taskstate.conf
ok $? "modules-load.d and modprobe.d: opt-in, every line commented out"

lib=$(readlink -f "/usr/lib/$ma/libtaskstate.so.0")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
# Exported: exactly the functions libtaskstate.map lists, each under the
# version node of the release that added it.
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort > "$tmp/exported"
awk '/^LIBTASKSTATE_[0-9.]+ \{/ { node = $1 }
     /^\t\ttaskstate_[a-z_0-9]*;$/ { sub(/^\t\t/, ""); sub(/;$/, ""); print $0 "@@" node }' \
	"$top/lib/libtaskstate.map" | sort > "$tmp/listed"
bad=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | sed 's/@.*//' |
      grep -v -e '^taskstate_' -e '^LIBTASKSTATE_')
[ "$soname" = libtaskstate.so.0 ] && [ -z "$bad" ] && [ -s "$tmp/listed" ] &&
	cmp -s "$tmp/exported" "$tmp/listed"
rc=$?
[ -z "$bad" ] || echo "$bad" | comment
diff "$tmp/listed" "$tmp/exported" | comment
ok $rc "library: soname $soname, exports the $(wc -l < "$tmp/listed") functions of libtaskstate.map, each under its version node"

# A program of a user, built with pkg-config alone.
cat > "$tmp/user.c" <<'EOC'
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <libtaskstate.h>

int main(void)
{
	__u64 w = taskstate_pack(TASKSTATE_BLOCKED, 42);
	int fd;

	if (strcmp(taskstate_state_name(taskstate_state(w)), "BLOCKED"))
		return 1;
	/* No module on this host: the library says so with -errno. */
	setenv("TASKSTATE_DEV", "/nonexistent", 1);
	fd = taskstate_open();
	printf("%s %d\n", taskstate_state_name(TASKSTATE_RUNNING), fd);
	return fd == -ENOENT ? 0 : 1;
}
EOC
# shellcheck disable=SC2046
cc $(pkg-config --cflags libtaskstate) -o "$tmp/user" "$tmp/user.c" \
	$(pkg-config --libs libtaskstate) > "$tmp/cc.log" 2>&1 &&
	[ "$("$tmp/user")" = "RUNNING -2" ] &&
	objdump -p "$tmp/user" | grep -q 'NEEDED *libtaskstate.so.0'
rc=$?
[ $rc = 0 ] || { comment < "$tmp/cc.log"; pkg-config --cflags --libs libtaskstate 2>&1 | comment; }
ok $rc "a program builds with pkg-config libtaskstate ($(pkg-config --modversion libtaskstate 2>/dev/null)) and runs against libtaskstate.so.0"

# The packaged command and library, for the VM smoke test.
for p in taskstate-tools libtaskstate0; do
	dpkg-deb -x "$out/${p}_${ver}_"*.deb "$vm/root"
done

# --- purge ------------------------------------------------------------------
for p in "${pkgs[@]}"; do
	dpkg -L "$p" 2>/dev/null
done | sort -u > "$tmp/files"
t0=$(date +%s)
apt_q purge "${pkgs[@]}" > "$tmp/purge.log" 2>&1
rc=$?
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${db:Status-Abbrev}\n' "$p" 2>/dev/null | grep -q '^[a-z][nc]' ||
		! dpkg-query -W "$p" >/dev/null 2>&1 || { echo "# $p: $(dpkg-query -W -f='${db:Status-Abbrev}' "$p")"; rc=1; }
	dpkg-query -W -f='${db:Status-Abbrev}\n' "$p" 2>/dev/null | grep -q '^.c' && { echo "# $p: config files left"; rc=1; }
done
[ $rc = 0 ] || tail -n 20 "$tmp/purge.log" | comment
ok $rc "apt-get purge ($(( $(date +%s) - t0 )) s)"

[ -z "$(dkms status "$name" 2>/dev/null)" ] && [ ! -e "/var/lib/dkms/$name" ] &&
	[ ! -e "/usr/src/$name-$ver" ]
ok $? "no DKMS registration, no /var/lib/dkms/$name, no /usr/src/$name-$ver"

rc=0
left=$(ls /lib/modules/*/updates/dkms/"$name".ko* 2>/dev/null)
[ -z "$left" ] || { echo "$left" | comment; rc=1; }
for k in /lib/modules/*; do
	k=${k##*/}
	! modinfo -k "$k" "$name" >/dev/null 2>&1 || { echo "# $k: modinfo still finds $name"; rc=1; }
	! grep -qs "/$name.ko" "/lib/modules/$k/modules.dep" || { echo "# $k: in modules.dep"; rc=1; }
done
ok $rc "no module left in /lib/modules, none in a modules.dep"

rc=0
while read -r f; do
	[ "$f" = /. ] && continue	# (dpkg -L lists it)
	# /lib, a merged-/usr link to /usr/lib, is the system's.
	[ -d "$f" ] && [ -L "$f" ] && [ "${f%/*}" = "" ] && continue
	# Directories other packages own too stay.
	[ -d "$f" ] && [ ! -L "$f" ] && dpkg -S "$f" >/dev/null 2>&1 && continue
	if [ -e "$f" ] || [ -L "$f" ]; then echo "# left: $f"; rc=1; fi
done < "$tmp/files"
snapshot > "$tmp/after"
if ! cmp -s "$tmp/before" "$tmp/after"; then
	diff "$tmp/before" "$tmp/after" | grep '^>' | comment
	diff "$tmp/before" "$tmp/after" | grep -q '^>' && rc=1
fi
ok $rc "no file of the packages left, nothing new under /usr/src /var/lib/dkms /lib/modules /etc /usr/include /usr/lib/$ma /usr/bin /usr/share"

tap_done deb-test "$start"
