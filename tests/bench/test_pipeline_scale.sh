#!/bin/sh
# The scale benchmark of the flush path (bench/pipeline-scale.c), run
# small so it cannot rot: 20 processes, 400 stacks, 3 intervals. Every
# stack fed must come out in the profiles the store wrote: the sum of the
# counts read back (the project's pprof decoder, bench/pprofutil) equals
# the samples fed, each (process, stack) is one sample, each process has
# a profile per interval, and go tool pprof reads them.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/testlib.sh
BUILD=${BUILD:-build}
plan 5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
procs=20 stacks=400 intervals=3
out=$("$BUILD/bench/pipeline-scale" --procs $procs --stacks $stacks --cpus 4 --hz 99 \
	--interval 2 --intervals 2 --warmup 1 --dir "$dir/store" 2>&1)
status=$?
echo "$out" | sed 's/^/  /'
if [ $status -eq 0 ] && echo "$out" | grep -q '^per_location: locations=[1-9]'; then
	pass "pipeline_scale_runs"
else
	fail "pipeline_scale_runs" "exited $status or printed no summary"
fi
files=$(find "$dir/store" -name '*.pb.gz' | sort)
fed=$(echo "$out" | sed -n 's/^fed: samples=\([0-9]*\) .*/\1/p')
# shellcheck disable=SC2086
got=$("$BUILD/bench/pprofutil" count $files 2>&1)
n=$(echo "$got" | sed -n 's/^samples=\([0-9]*\) .*/\1/p')
nfiles=$(echo "$got" | sed -n 's/.* files=\([0-9]*\).*/\1/p')
if [ -n "$fed" ] && [ "$fed" = "$n" ]; then
	pass "pipeline_scale_counts: $n samples fed and read back"
else
	fail "pipeline_scale_counts" "fed ${fed:-?} samples, the profiles hold ${n:-?} ($got)"
fi
# shellcheck disable=SC2086
nsamples=$("$BUILD/bench/pprofutil" ustacks $files | wc -l)
if [ "$nsamples" -eq $((stacks * intervals)) ]; then
	pass "pipeline_scale_stacks: every stack a sample in each of $intervals intervals"
else
	fail "pipeline_scale_stacks" "$nsamples samples in the profiles, $((stacks * intervals)) fed"
fi
if [ "${nfiles:-0}" -eq $((procs * intervals)) ]; then
	pass "pipeline_scale_profiles: $nfiles profiles, one per process per interval"
else
	fail "pipeline_scale_profiles" "${nfiles:-0} profiles, $((procs * intervals)) expected"
fi
first=$(echo "$files" | head -1)
if [ -n "$first" ] && go tool pprof -raw "$first" 2>/dev/null | grep -q '^Samples:'; then
	pass "pipeline_scale_gopprof: go tool pprof reads $(basename "$first")"
else
	fail "pipeline_scale_gopprof" "go tool pprof cannot read ${first:-any profile}"
fi
exit $failed
