#!/bin/sh
# vmtest/image-check.sh: the host's half of the disk image case
# (vmtest/image.sh ran in the guest). Reads back what the guest left on its
# writable disk and checks it; run by vmtest/run.sh once the guest is off.
#
#   image-check.sh STATE_DISK CONSOLE_LOG NEXT_IMAGE OUTDIR [UPGRADE]
#
# STATE_DISK: the guest's writable disk (read with debugfs, never mounted);
# CONSOLE_LOG: the guest's console, with the case's "vmtest: image:" lines,
# its VMTEST-IMAGE-RESULT line and, in CONSOLE_LOG.swap, what qemu's
# monitor answered to the swap; NEXT_IMAGE: the image swapped in; OUTDIR:
# where the disk's results/ and its store and queue (lib/) are copied;
# UPGRADE: no when the guest made no upgrade (then what the next image
# does is not checked, and the first image's own `ebprof ls` lists its
# store; yes by default).
# Checks, every profile read with go tool pprof:
#   - the compute contract's profile (POST /profile/cpu): samples, frames
#     of PostgreSQL's backends symbolized, their backend_type label
#   - the SVG (GET /profile/cpu?format=svg): well-formed (xmllint), with
#     those frames
#   - the agent's store: profiles of two intervals from the first image,
#     more from the next one; a client backend's of each symbolized and
#     labelled; every one of the first image's still listed by `ebprof ls`
#     (the next image's binary) after the upgrade
#   - the queue: what the first image's agent queued is what it stored,
#     every queued profile reached the collector, nothing is left queued
#   - the next image was mounted after the swap (its VERSION)
# Prints one line: "ok DETAILS" or "fail WHY" (the first failures).
set -u
export LC_ALL=C # one collation for sort and comm
state=$1 log=$2 next=$3 out=$4 upgrade=${5:-yes}

fails=""
bad() { fails="${fails:+$fails; }$*"; }
verdict() {
	if [ -n "$fails" ]; then
		echo "fail $fails"
	else
		echo "ok $*"
	fi
	exit 0
}

res=$(grep -a '^VMTEST-IMAGE-RESULT:' "$log" 2>/dev/null | tail -1 | tr -d '\r')
case "$res" in
"VMTEST-IMAGE-RESULT: ok "*) ;;
"VMTEST-IMAGE-RESULT: fail "*)
	bad "in the guest: ${res#VMTEST-IMAGE-RESULT: fail }"
	[ ! -s "$log.swap" ] || bad "the swap: $(tail -2 "$log.swap" | tr '\n' ' ')"
	verdict
	;;
*)
	last=$(grep -a '^vmtest: \(image\|running\)' "$log" 2>/dev/null | tail -1 | tr -d '\r')
	bad "no result from the guest (last: ${last:-nothing})"
	verdict
	;;
esac
times=${res#VMTEST-IMAGE-RESULT: ok }

rm -rf "$out"
mkdir -p "$out"
for d in results lib; do
	debugfs -R "rdump /$d $out" "$state" >"$out/debugfs-$d.log" 2>&1
	[ -d "$out/$d" ] || bad "cannot read /$d of $state: $(tail -1 "$out/debugfs-$d.log")"
done
[ -z "$fails" ] || verdict
r=$out/results store=$out/lib/profiles
sort -o "$r/run1-store.txt" "$r/run1-store.txt"

# go tool pprof -raw FILE > FILE.raw; 1 when it cannot read it
raw() {
	HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} GOFLAGS=-mod=mod \
		go tool pprof -raw "$1" >"$1.raw" 2>&1 && ! grep -qi warning "$1.raw"
}
samples() {
	awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $2 ~ /:$/ { n += $1 } END { print n + 0 }' "$1"
}
pgframes() { grep -qE ' (PostgresMain|exec_simple_query) ' "$1"; }

# --- the HTTP API -------------------------------------------------------------
f=$r/compute.pb
if ! raw "$f"; then
	bad "POST /profile/cpu: go tool pprof cannot read it: $(head -2 "$f.raw" | tr '\n' ' ')"
else
	[ "$(samples "$f.raw")" -gt 0 ] || bad "POST /profile/cpu: no samples"
	pgframes "$f.raw" || bad "POST /profile/cpu: no PostgresMain or exec_simple_query frame"
	grep -q 'backend_type:\[client backend\]' "$f.raw" || bad "POST /profile/cpu: no backend_type:[client backend] sample label"
fi
f=$r/cpu.svg
if ! xmllint --noout "$f" 2>"$out/xmllint.log"; then
	bad "the SVG is not well-formed: $(head -1 "$out/xmllint.log")"
elif ! grep -q '<svg' "$f" || ! grep -qE 'PostgresMain|exec_simple_query' "$f"; then
	bad "the SVG has no PostgresMain or exec_simple_query frame"
fi

# --- the store: two intervals of the first image, more from the next -----
find "$store" -name '*.pb.gz' | sed "s|^$store/||" | sort >"$out/store.txt"
run1=$(wc -l <"$r/run1-store.txt")
comm -13 "$r/run1-store.txt" "$out/store.txt" >"$out/run2-store.txt"
run2=$(wc -l <"$out/run2-store.txt")
n=$(sed 's|.*/\([0-9]\{6\}\)-[^/]*$|\1|' "$r/run1-store.txt" | sort -u | wc -l)
[ "$n" -ge 2 ] || bad "the first image's agent stored profiles of $n interval(s), not 2"
runs="run1 run2"
if [ "$upgrade" = no ]; then
	runs=run1
	[ "$run2" = 0 ] || bad "$run2 profiles stored after the agent stopped"
else
	[ "$run2" -gt 0 ] || bad "the next image's agent stored nothing"
fi
missing=$(comm -23 "$r/run1-store.txt" "$out/store.txt" | head -3)
[ -z "$missing" ] || bad "first image's profiles gone from the store: $missing"
# a client backend's profile of each image: the largest
for run in $runs; do
	list=$r/run1-store.txt
	[ "$run" = run1 ] || list=$out/run2-store.txt
	f=$(grep 'client_backend\.pb\.gz$' "$list" | while read -r p; do
		echo "$(stat -c %s "$store/$p" 2>/dev/null || echo 0) $p"
	done | sort -n | tail -1 | cut -d' ' -f2)
	if [ -z "$f" ]; then
		bad "$run: no client backend profile in the store"
	elif ! raw "$store/$f"; then
		bad "$run: go tool pprof cannot read $f"
	else
		[ "$(samples "$store/$f.raw")" -gt 0 ] || bad "$run: $f has no samples"
		pgframes "$store/$f.raw" || bad "$run: $f has no PostgresMain or exec_simple_query frame"
		grep -q '^Comment: backend_type=client backend' "$store/$f.raw" ||
			bad "$run: $f has no backend_type=client backend label"
	fi
done
# every profile of the first image listed by the next image's `ebprof ls`
# (by its own without the upgrade)
jq -r '.path' "$r/ls.jsonl" 2>/dev/null | sed 's|.*/profiles/||' | sort >"$out/ls.txt"
missing=$(comm -23 "$r/run1-store.txt" "$out/ls.txt" | head -3)
[ -z "$missing" ] || bad "ebprof ls of the $([ "$upgrade" = no ] && echo first || echo next) image does not list: $missing"

# --- the queue: stored = queued, every queued profile delivered ----------
queued=$(wc -l <"$r/queued.jsonl")
[ "$queued" = "$run1" ] || bad "the first image's agent queued $queued profiles but stored $run1"
[ "$upgrade" != no ] || verdict "$run1 profiles of the image ($queued queued for the collector, down; no upgrade in this guest); $times"
# each as "time pid comm backend_type" (a group of short-lived processes
# has no pid label)
key='def key: "\(.pid // "-") \(.comm // "-") \(.backend_type // "-")";'
jq -r "$key"' "\(.start_ns / 1000000000 | floor | todate) \(.labels | map({key: .[0], value: .[1]}) | from_entries | key)"' \
	"$r/queued.jsonl" | sort >"$out/queued.txt"
jq -r "$key"' .body[] | "\(.created_at) \(.labels | from_entries | key)"' "$r/serve-list.json" |
	sort >"$out/delivered.txt"
lost=$(comm -23 "$out/queued.txt" "$out/delivered.txt" | head -3)
[ -z "$lost" ] || bad "queued but not delivered: $lost"
left=$(grep -c 'p-.*\.ebpq$' "$r/queue-at-end.txt")
[ "$left" = 0 ] || bad "$left profiles still queued at the end"

# --- the upgrade: the next image was the one mounted --------------------
want=$(debugfs -R 'cat /VERSION' "$next" 2>/dev/null)
[ "$(sed -n 2p "$r/versions.txt")" = "$want" ] ||
	bad "mounted after the swap: '$(sed -n 2p "$r/versions.txt")', the next image holds '$want'"
grep -q '^exit 0' "$log.swap" 2>/dev/null || bad "the swap through qemu's monitor: $(tail -1 "$log.swap")"

verdict "$run1 profiles of the first image ($queued queued, all delivered after the upgrade), $run2 of the next; $times"
