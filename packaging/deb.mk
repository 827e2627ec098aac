# The Debian package: `make deb` -> $(BUILD)/packaging/ebprof_VERSION_ARCH.deb
# (and its -dbgsym .deb), built by dpkg-buildpackage with debhelper from
# packaging/debian/ on a copy of the sources under $(BUILD)/packaging/, since
# dpkg-buildpackage writes its results into the parent directory. The
# package version is the VERSION file's (native package). The build prints
# the size of every package it made. Tested by tests/packaging/test_deb.sh.

DEB_PACKAGES += build-essential debhelper dpkg-dev lintian man-db systemd gcc golang-go util-linux libcap2-bin curl

DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo unknown)
DEB_DIR := $(BUILD)/packaging
DEB_SRC := $(DEB_DIR)/ebprof-$(VERSION)
DEB_FILE := $(DEB_DIR)/ebprof_$(VERSION)_$(DEB_ARCH).deb
# What goes into the package: a change to any of these rebuilds it.
DEB_INPUTS := Makefile VERSION $(shell find bpf include proto symbolizer userspace tools -type f) $(wildcard packaging/debian/* packaging/debian/source/*) \
	packaging/ebprof.service packaging/ebprof.conf packaging/ebprof.8

SHELL_TESTS += tests/packaging/test_deb.sh
TEST_PREREQS += $(DEB_FILE)

# Prints the size of every package built.
DEB_SIZES = for f in $(DEB_DIR)/*.deb $(DEB_DIR)/*.ddeb; do [ -f "$$f" ] || continue; \
	echo "$$(basename $$f): $$(( ($$(stat -c %s $$f) + 1023) / 1024 )) KiB" \
		"(installed: $$(dpkg-deb -f $$f Installed-Size) KiB)"; done

.PHONY: deb
deb: deps
	@if $(MAKE) -q --no-print-directory $(DEB_FILE); then $(DEB_SIZES); \
	else $(MAKE) --no-print-directory $(DEB_FILE); fi

$(DEB_FILE): $(DEB_INPUTS)
	rm -rf $(DEB_SRC) $(DEB_DIR)/ebprof_* $(DEB_DIR)/ebprof-dbgsym_*
	mkdir -p $(DEB_SRC)/packaging
	cp -R Makefile VERSION bpf include proto symbolizer userspace $(DEB_SRC)/
	mkdir -p $(DEB_SRC)/tools && cp tools/check-layers.sh $(DEB_SRC)/tools/
	cp packaging/ebprof.service packaging/ebprof.conf $(DEB_SRC)/packaging/
	sed '1,/^\.TH/s/"ebprof [0-9][^"]*"/"ebprof $(VERSION)"/' packaging/ebprof.8 > $(DEB_SRC)/packaging/ebprof.8
	cp -RL packaging/debian $(DEB_SRC)/debian
	@# A VERSION ahead of the changelog gets an entry of its own (in the copy).
	@cl=$$(cd $(DEB_SRC) && dpkg-parsechangelog -S Version); \
	if [ "$$cl" != "$(VERSION)" ]; then \
		echo "debian/changelog is at $$cl: adding an entry for $(VERSION)"; \
		{ printf 'ebprof (%s) unstable; urgency=medium\n\n  * Version %s.\n\n -- %s  %s\n\n' \
			'$(VERSION)' '$(VERSION)' \
			"$$(cd $(DEB_SRC) && dpkg-parsechangelog -S Maintainer)" "$$(date -R)"; \
		  cat $(DEB_SRC)/debian/changelog; } > $(DEB_SRC)/debian/changelog.new && \
		mv $(DEB_SRC)/debian/changelog.new $(DEB_SRC)/debian/changelog; \
	fi
	cd $(DEB_SRC) && DEB_BUILD_OPTIONS="parallel=$$(nproc) $$DEB_BUILD_OPTIONS" \
		dpkg-buildpackage -b -us -uc > ../build.log 2>&1 || \
		{ tail -40 ../build.log; echo "error: dpkg-buildpackage failed, see $(DEB_DIR)/build.log" >&2; exit 1; }
	@test -f $@ || { echo "error: dpkg-buildpackage made no $@" >&2; exit 1; }
	@# The copy's objects would otherwise be found by the Makefile's *.d search.
	rm -rf $(DEB_SRC)
	@$(DEB_SIZES)
