#!/bin/sh
# The layer check (tools/check-layers.sh): clean on the project itself, and
# it names file, line and rule for each kind of include that runs against
# the layers, on a scratch tree made to break them.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
plan 11
check="$top/tools/check-layers.sh"

out=$(sh "$check" "$top" 2>&1)
if [ $? = 0 ] && [ -z "$out" ]; then
	pass "the project keeps its layers"
else
	fail "the project keeps its layers" "$out"
fi

tmp=$(mktemp -d /tmp/ebprof-test-layers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include/ebprof" "$tmp/symbolizer" "$tmp/bpf" "$tmp/userspace/util" \
	"$tmp/userspace/process" "$tmp/userspace/formats" "$tmp/userspace/sinks/store" \
	"$tmp/userspace/sinks/remote" "$tmp/userspace/cli" "$tmp/userspace/newlayer"
touch "$tmp/include/ebprof/symbolizer.h" "$tmp/include/ebprof/bpf_shared.h" \
	"$tmp/userspace/util/log.h" "$tmp/userspace/process/procmaps.h" \
	"$tmp/userspace/formats/pprof.h" "$tmp/userspace/sinks/sink.h" \
	"$tmp/userspace/sinks/store/store.h" "$tmp/userspace/sinks/remote/remote.h" \
	"$tmp/symbolizer/elf.h"
# Allowed: own folder by bare name, lower layers by folder, the parent of a
# subfolder, the shared BPF header, the symbolizer's own headers.
printf '#include "sink.h"\n#include "util/log.h"\n#include "formats/pprof.h"\n' > "$tmp/userspace/sinks/x.c"
printf '#include "store.h"\n#include "sinks/sink.h"\n#include "ebprof/bpf_shared.h"\n' > "$tmp/userspace/sinks/store/y.c"
printf '#include "elf.h"\n#include "ebprof/symbolizer.h"\n' > "$tmp/symbolizer/ok.c"
out=$(sh "$check" "$tmp" 2>&1)
if [ $? = 0 ]; then pass "allowed includes pass"; else fail "allowed includes pass" "$out"; fi

expect() { # name, file, content, the words the message must hold
	printf '%s\n' "$3" > "$tmp/$2"
	out=$(sh "$check" "$tmp" 2>&1)
	rc=$?
	rm -f "$tmp/$2"
	if [ $rc = 1 ] && printf '%s' "$out" | grep -qF "$2:1: #include" &&
		printf '%s' "$out" | grep -qF "$4"; then
		pass "$1"
	else
		fail "$1" "exit $rc, expected '$2:1: ... $4' in: $out"
	fi
}
expect "a lower layer including a higher one" userspace/process/bad.c \
	'#include "formats/pprof.h"' "process/ may not use formats/"
expect "the symbolizer including userspace" symbolizer/bad.c \
	'#include "util/log.h"' "symbolizer/ includes only its own headers"
expect "a layer without the symbolizer including it" userspace/formats/bad.c \
	'#include "ebprof/symbolizer.h"' "formats/ may not use the symbolizer"
expect "a header of another folder by bare name" userspace/cli/bad.c \
	'#include "log.h"' "name headers of other folders by their folder"
expect "sibling subfolders" userspace/sinks/store/bad.c \
	'#include "sinks/remote/remote.h"' "a sibling folder of the same layer"
expect "a file at the top of userspace/" userspace/bad.c \
	'#include "util/log.h"' "holds no files at its top level"
expect "a folder missing from the table" userspace/newlayer/bad.c \
	'#include "util/log.h"' "has no layer in tools/check-layers.sh"
expect "a header that does not exist" userspace/cli/bad.c \
	'#include "util/nothere.h"' "no such header"
expect "the skeleton outside sampling/" userspace/cli/bad.c \
	'#include "profile.skel.h"' "sampling/ business"
exit $failed
