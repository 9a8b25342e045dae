# SPDX-License-Identifier: GPL-2.0
#
# taskstate: build, test, install.  The module itself is described by
# Kbuild; this file only drives kbuild and the user-space parts.
#
#   make                 the module for the running kernel, and the tools
#   make check           the unit tests, the host tests (DKMS, install, Debian
#                        packages, man pages) and the VM test suite on the
#                        kernels in KERNELS: by default amd64 alone (Debian
#                        12's 6.1), the quick proof that it works here;
#                        KERNELS=all: the ten (scripts/kernels.sh)
#   make demo            boot a VM, load the module, show the table (installs
#                        only what it needs: setup.sh demo)
#   make bench           benchmarks, writes bench/REPORT.md and
#                        bench/REPORT-count.md
#   make bench-count     the counted benchmark alone (bench/REPORT-count.md)
#   make install         module (modules_install + depmod), headers, library,
#                        CLI, man pages
#   make bpf             the BPF backend (bpf/: the program, its loader
#                        taskstate-bpf), for kernels that refuse the module;
#                        needs clang, libbpf-dev, bpftool
#   make install-bpf     taskstate-bpf and taskstate-bpf.service (the
#                        command itself: make install); uninstall-bpf
#   make deps            install the Debian packages make check needs for
#                        KERNELS (unset: all ten), HOST_TESTS and BENCH
#   make deb             Debian packages (debian/) into build/deb/:
#                        taskstate-dkms, taskstate-tools, libtaskstate0,
#                        libtaskstate-dev

KERNELRELEASE ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KERNELRELEASE)/build
# "all" goes to the scripts as it is: ts_flavours() (scripts/lib.sh)
# expands it.
KERNELS ?= amd64
PREFIX ?= /usr/local
DESTDIR ?=
# Absolute: modules_install and the tools install run in other directories.
override DESTDIR := $(abspath $(DESTDIR))

all: module tools

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

lib:
	$(MAKE) -C lib

bpf:
	$(MAKE) -C bpf

tools:
	$(MAKE) -C tools

deps:
	scripts/setup.sh

check:
	KERNELS="$(KERNELS)" scripts/setup.sh
	KERNELS="$(KERNELS)" scripts/check.sh

demo:
	scripts/setup.sh demo
	scripts/demo.sh

bench: deps
	scripts/bench.sh

bench-count: deps
	scripts/bench.sh --count

LIBDIR ?= $(PREFIX)/lib
MANDIR ?= $(PREFIX)/share/man

# The library's pages: every man/man3/*.3, the .so links among them too.
MAN3 := $(wildcard man/man3/*.3)

install: module lib tools
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) modules_install
	depmod $(if $(DESTDIR),-b $(DESTDIR)) $(KERNELRELEASE)
	$(MAKE) -C lib install PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) DESTDIR=$(DESTDIR)
	$(MAKE) -C tools install PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) DESTDIR=$(DESTDIR)
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(MANDIR)/man4
	install -m 0644 man/taskstate.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 man/taskstate.4 $(DESTDIR)$(MANDIR)/man4/
	$(if $(DESTDIR),,ldconfig)

# modules_install puts the module in extra/ (6.1) or updates/ (6.12), and
# compresses it where the kernel's config says so (6.12: taskstate.ko.xz).
SYSTEMDDIR ?= /lib/systemd/system
BINDIR ?= $(PREFIX)/bin

install-bpf: bpf
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSTEMDDIR)
	install -m 0755 bpf/taskstate-bpf $(DESTDIR)$(BINDIR)/
	sed 's|/usr/bin/|$(BINDIR)/|' systemd/taskstate-bpf.service \
		> $(DESTDIR)$(SYSTEMDDIR)/taskstate-bpf.service
	chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/taskstate-bpf.service

uninstall-bpf:
	rm -f $(DESTDIR)$(BINDIR)/taskstate-bpf \
	      $(DESTDIR)$(SYSTEMDDIR)/taskstate-bpf.service

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KERNELRELEASE)/updates/taskstate.ko* \
	      $(DESTDIR)/lib/modules/$(KERNELRELEASE)/extra/taskstate.ko*
	if [ -d $(DESTDIR)/lib/modules/$(KERNELRELEASE) ]; then \
		depmod $(if $(DESTDIR),-b $(DESTDIR)) $(KERNELRELEASE); fi
	rm -f $(DESTDIR)$(PREFIX)/bin/taskstate \
	      $(DESTDIR)$(PREFIX)/share/bash-completion/completions/taskstate \
	      $(DESTDIR)$(LIBDIR)/libtaskstate.a \
	      $(DESTDIR)$(LIBDIR)/libtaskstate.so* \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/libtaskstate.pc \
	      $(DESTDIR)$(PREFIX)/include/libtaskstate.h \
	      $(DESTDIR)$(PREFIX)/include/linux/taskstate.h \
	      $(DESTDIR)$(MANDIR)/man1/taskstate.1 \
	      $(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(MAN3))) \
	      $(DESTDIR)$(MANDIR)/man4/taskstate.4
	$(if $(DESTDIR),,ldconfig)

# Binary packages only (no source package), unsigned, into build/deb/:
# dpkg-buildpackage writes its results next to the source directory, so
# it runs on a copy of the tree in build/deb/src.
deb:
	scripts/build-deb.sh

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C tools clean
	$(MAKE) -C bpf clean
	rm -rf build

.PHONY: all module lib tools bpf deps check demo bench bench-count install \
	uninstall install-bpf uninstall-bpf deb clean
