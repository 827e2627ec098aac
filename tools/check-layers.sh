#!/bin/sh
# The layer check: a file includes headers of its own folder, of the
# folders above it in its own tree (sinks/store/ -> sinks/), and of the
# layers its folder may use (the table below), never anything else. The
# build runs it (make: $(BUILD)/layers.ok) and so does `make test`.
#
#   tools/check-layers.sh [ROOT]     exit 0: clean; 1: violations (one line
#                                    each: file:line, the include, the rule)
#
# Project headers are named from userspace/ by folder ("util/log.h") or,
# inside the same folder, by bare name ("store_internal.h"). include/ebprof/
# is the bottom: any layer may use bpf_shared.h and in_root.h; symbolizer.h
# is the symbolizer's public API and counts as the symbolizer layer. The
# generated skeleton belongs to sampling/, the protoc-c output of pprof to
# formats/; that of Pyroscope's push API (proto/push.proto) to the two
# that speak it, sinks/ (the agent pushes) and serve/ (the collector takes).
set -u
root=${1:-.}
cd "$root" || exit 2

# layer: the folders (top-level under userspace/, or symbolizer, bpf,
# include) it may include besides itself. Lowest first.
rules='
include:
bpf:
symbolizer:
util:
query: util
process: util
sampling: util process symbolizer
profile: util query process sampling symbolizer
formats: util profile
sinks: util profile formats
pipeline: util query process sampling profile formats sinks symbolizer
http: util query process sampling profile formats sinks pipeline symbolizer
serve: util query process sampling profile formats sinks pipeline symbolizer
agent: util query process sampling profile formats sinks pipeline http symbolizer
cli: util query process sampling profile formats sinks pipeline http agent serve symbolizer
'

files=$(find userspace symbolizer bpf include -name '*.[ch]' 2>/dev/null | sort)
[ -n "$files" ] || { echo "check-layers: no sources under $(pwd)" >&2; exit 2; }

# One line per include: file, line number, the quoted name.
for f in $files; do
	awk -v f="$f" '/^[ \t]*#[ \t]*include[ \t]*"/ {
		s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s); print f "\t" FNR "\t" s }' "$f"
done | awk -v rules="$rules" '
BEGIN {
	FS = "\t"
	n = split(rules, lines, "\n")
	for (i = 1; i <= n; i++) {
		if (lines[i] !~ /:/)
			continue
		name = lines[i]; sub(/:.*/, "", name)
		rest = lines[i]; sub(/^[^:]*:/, "", rest)
		known[name] = 1
		m = split(rest, uses, " ")
		for (j = 1; j <= m; j++)
			if (uses[j] != "")
				may[name, uses[j]] = 1
	}
	bad = 0
}
# The layer of a file path, and its folder.
function layer_of(path,   p) {
	if (path ~ /^userspace\//) {
		p = path; sub(/^userspace\//, "", p)
		if (p !~ /\//)
			return "userspace-top"
		sub(/\/.*/, "", p)
		return p
	}
	p = path; sub(/\/.*/, "", p)
	return p
}
function dir_of(path,   p) { p = path; sub(/\/[^\/]*$/, "", p); return p }
function exists(path,   line, r) {
	r = (getline line < path); close(path)
	return r >= 0
}
{
	file = $1; lineno = $2; inc = $3
	me = layer_of(file); mydir = dir_of(file)
	where = file ":" lineno ": #include \"" inc "\": "
	if (me == "userspace-top") {
		print where "userspace/ holds no files at its top level: put it in the folder of its layer"; bad++; next
	}
	if (!(me in known)) {
		print where "folder " me " has no layer in tools/check-layers.sh: add it to the table"; bad++; next
	}
	# Resolve the include to a file and its layer.
	if (inc ~ /\.skel\.h$/) {
		if (me != "sampling") { print where "the BPF skeleton is sampling/ business"; bad++ }
		next
	}
	if (inc == "proto/push.pb-c.h") {
		if (me != "sinks" && me != "serve") { print where "the Pyroscope push messages are sinks/ and serve/ business"; bad++ }
		next
	}
	if (inc ~ /^proto\//) {
		if (me != "formats") { print where "the pprof wire format (protoc-c output) is formats/ business"; bad++ }
		next
	}
	if (inc == "vmlinux.h" && me == "bpf")
		next
	if (inc ~ /^ebprof\//) {
		if (!exists("include/" inc)) { print where "no such header include/" inc; bad++; next }
		if (inc == "ebprof/symbolizer.h" && me != "symbolizer" && !((me, "symbolizer") in may)) {
			print where me "/ may not use the symbolizer"; bad++
		}
		next
	}
	if (me == "symbolizer" || me == "bpf" || me == "include") {
		if (inc ~ /\// || !exists(mydir "/" inc)) {
			print where me "/ includes only its own headers and include/ebprof/"; bad++
		}
		next
	}
	if (inc !~ /\//) {
		if (!exists(mydir "/" inc)) {
			print where "not in " mydir "/: name headers of other folders by their folder (\"util/log.h\")"; bad++
		}
		next
	}
	target = "userspace/" inc
	if (!exists(target)) { print where "no such header " target; bad++; next }
	tdir = dir_of(target); them = layer_of(target)
	if (tdir == mydir)
		next
	# Folders above mine in my own tree (sinks/store/ -> sinks/).
	if (index(mydir "/", tdir "/") == 1)
		next
	if (them == me) {
		print where "a sibling folder of the same layer (" tdir "/): share through " them "/ instead"; bad++; next
	}
	if ((me, them) in may)
		next
	print where me "/ may not use " them "/ (a layer above it, or not one of its layers)"; bad++
}
END {
	if (bad) {
		printf "check-layers: %d include(s) break the layers (rules: tools/check-layers.sh)\n", bad
		exit 1
	}
}'
