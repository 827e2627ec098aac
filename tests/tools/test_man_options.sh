#!/bin/sh
# The man page's option lists (tools/man-options.sh): packaging/ebprof.8 has
# the program's, as `ebprof help-man` prints them from the table of
# options; the script puts them between the BEGIN/END lines and leaves the
# rest of a page as it is; a page with a BEGIN line left open, or naming a
# command without a table of options, is an error.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
ebprof=$top/$BUILD/ebprof
script=$top/tools/man-options.sh
plan 5

tmp=$(mktemp -d /tmp/ebprof-test-man-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if sh "$script" "$ebprof" "$top/packaging/ebprof.8" >"$tmp/page" 2>"$tmp/err" &&
	cmp -s "$tmp/page" "$top/packaging/ebprof.8"; then
	pass "packaging/ebprof.8 has the program's option lists"
else
	fail "packaging/ebprof.8 has the program's option lists" \
		"$(cat "$tmp/err") $(diff "$top/packaging/ebprof.8" "$tmp/page" | head -5 | tr '\n' ' ')"
fi

printf '%s\n' '.SH TOP OPTIONS' 'Text before.' '.\" BEGIN OPTIONS: top' '.TP' 'stale' \
	'.\" END OPTIONS' 'Text \- after.' >"$tmp/in.8"
"$ebprof" help-man top >"$tmp/top.8"
{
	printf '%s\n' '.SH TOP OPTIONS' 'Text before.' '.\" BEGIN OPTIONS: top'
	cat "$tmp/top.8"
	printf '%s\n' '.\" END OPTIONS' 'Text \- after.'
} >"$tmp/want.8"
if sh "$script" "$ebprof" "$tmp/in.8" >"$tmp/out.8" && cmp -s "$tmp/out.8" "$tmp/want.8"; then
	pass "the lists replaced, the rest kept"
else
	fail "the lists replaced, the rest kept" "$(diff "$tmp/want.8" "$tmp/out.8" | head -5 | tr '\n' ' ')"
fi
if grep -q '^\\fB\\-d\\fR, \\fB\\-\\-delay\\fR' "$tmp/top.8" &&
	! grep -q -- 'duration' "$tmp/top.8"; then
	pass "help-man top lists top's options"
else
	fail "help-man top lists top's options" "$(head -5 "$tmp/top.8" | tr '\n' ' ')"
fi

refused() { # name, the page's lines (one argument), the words of the message
	printf '%s\n' "$2" >"$tmp/bad.8"
	out=$(sh "$script" "$ebprof" "$tmp/bad.8" 2>&1 >/dev/null)
	if [ $? = 1 ] && echo "$out" | grep -q "$3"; then pass "$1"; else fail "$1" "$out"; fi
}
refused "an open BEGIN line is an error" '.\" BEGIN OPTIONS: ls
x' 'BEGIN OPTIONS without END OPTIONS'
refused "a command without a table is an error" '.\" BEGIN OPTIONS: agent
.\" END OPTIONS' "no option table for 'agent'"
exit $failed
