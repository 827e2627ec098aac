# VM disk image (`make disk-image`): an ext4 image with a self-contained
# ebprof, the systemd unit, the default config and a README
# (packaging/image/README). Built without a root mount (mkfs.ext4 -d);
# everything lands under $(BUILD)/image/:
#   ebprof.full   the image link, unstripped
#   ebprof.debug  its debug info (the image binary has a .gnu_debuglink to it)
#   staging/      the image's content
#   ebprof.img    the image
#
# The image binary is a separate link of the same objects as $(BUILD)/ebprof.
# Libraries Debian ships as static archives are linked in. libcurl is linked
# statically too: its shared library (with libmicrohttpd's) drags 28
# libraries, 15.9 MB (OpenSSL, GnuTLS, krb5, LDAP, RTMP, libssh2, nghttp2,
# psl, idn2, unistring, brotli, ...), that would all have to be bundled
# (~19 MB with the binary), while the static link keeps only what the binary
# reaches: a 13.0 MB stripped binary (2.2 MB of it libpg_query, the
# PostgreSQL parser) plus 2.9 MB of bundled libraries (most
# of the binary is OpenSSL, which libssh2 needs anyway, and GnuTLS, which
# libmicrohttpd, librtmp and libldap need). Debian ships no static archive
# of MIT krb5 (libgssapi_krb5) and p11-kit, and libsasl2.a embeds its
# sqlite/pgsql/mysql/berkeley-db plugins, so these three stay shared and are
# copied with their own dependencies (krb5, com_err, keyutils, ffi) into the
# image's lib/, found through an $ORIGIN rpath. DT_RPATH, not DT_RUNPATH
# (--disable-new-dtags): RUNPATH only applies to the binary's own
# DT_NEEDED, RPATH also to the dependencies of the bundled libraries, and
# it wins over LD_LIBRARY_PATH. glibc is the VM's (build-image.sh prints
# the minimum version).

IMAGE_DIR := $(BUILD)/image
IMAGE := $(IMAGE_DIR)/ebprof.img
IMAGE_FULL := $(IMAGE_DIR)/ebprof.full

# Every library of LDLIBS, in link order, and what each needs in turn
# (pkg-config --static --libs). Static: --start-group resolves the order.
# libpg_query.a carries a protobuf-c of its own: Debian's comes first, so
# ebprof and libpg_query share one.
IMAGE_STATIC_LIBS := -lbpf -ldw -lelf -lprotobuf-c -lpg_query -liberty \
	-lcurl -lnghttp2 -lidn2 -lrtmp -lssh2 -lpsl -lssl -lcrypto -lldap -llber -lbrotlidec -lbrotlicommon \
	-lmicrohttpd -lgnutls -lhogweed -lnettle -lgmp -ltasn1 -lunistring \
	-ljansson -lsqlite3 -lzstd -llzma -lbz2 -lz
IMAGE_SHARED_LIBS := -l:libgssapi_krb5.so.2 -l:libsasl2.so.2 -l:libp11-kit.so.0
IMAGE_SYSTEM_LIBS := -lpthread -lm -ldl -lresolv
# The LDLIBS entries the lists above cover; a library added to LDLIBS must
# be added above too (the link stops and says so).
# libcurl is not in LDLIBS (symbolizer/curl_lazy.c loads it on first use);
# the image links it statically instead, without that object.
IMAGE_LDLIBS_COVERED := -lbpf -ldw -lelf -lpg_query -lprotobuf-c -lz -liberty -lcurl -lmicrohttpd -ljansson -lsqlite3 -lpthread -lm

# The static archives the main DEB_PACKAGES list does not bring already
# (e2fsprogs: mkfs.ext4, debugfs, e2fsck; the three shared libraries are
# named for clarity, libcurl4 and libgnutls30 depend on them anyway).
DEB_PACKAGES += e2fsprogs libzstd-dev liblzma-dev libbz2-dev libnghttp2-dev libidn2-dev librtmp-dev \
	libssh2-1-dev libpsl-dev libssl-dev libldap-dev libbrotli-dev libgnutls28-dev nettle-dev \
	libgmp-dev libtasn1-6-dev libunistring-dev libgssapi-krb5-2 libsasl2-2 libp11-kit0

SHELL_TESTS += tests/packaging/test_disk_image.sh
TEST_PREREQS += $(IMAGE)

.PHONY: disk-image
disk-image: deps
	$(MAKE) --no-print-directory $(IMAGE)

$(IMAGE_FULL): $(BUILD)/userspace/cli/main.o $(LIB_OBJS) packaging/image.mk
	@mkdir -p $(@D)
	@extra='$(filter-out $(IMAGE_LDLIBS_COVERED),$(LDLIBS))'; if [ -n "$$extra" ]; then \
		echo "error: LDLIBS has $$extra, which packaging/image.mk does not link; add it (and its static deps) to IMAGE_STATIC_LIBS or IMAGE_SHARED_LIBS" >&2; exit 1; fi
	$(CC) $(CFLAGS) -o $@.tmp $(filter-out %/curl_lazy.o,$(filter %.o,$^)) \
		-Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib' \
		-Wl,-Bstatic -Wl,--start-group $(IMAGE_STATIC_LIBS) -Wl,--end-group \
		-Wl,-Bdynamic $(IMAGE_SHARED_LIBS) $(IMAGE_SYSTEM_LIBS)
	mv $@.tmp $@

$(IMAGE): $(IMAGE_FULL) packaging/image/build-image.sh packaging/image/README packaging/image/install.sh \
		packaging/ebprof.service packaging/ebprof.conf VERSION
	sh packaging/image/build-image.sh $(IMAGE_FULL) $(IMAGE_DIR)
