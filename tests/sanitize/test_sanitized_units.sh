#!/bin/sh
# The unit tests once more, built with AddressSanitizer, UndefinedBehavior-
# Sanitizer and LeakSanitizer (make SANITIZE=1 unit-test, into build-san/):
# every parser, encoder, store and table test under the sanitizers on each
# `make test`. The whole suite under them is `make test SANITIZE=1`.
# One PASS/FAIL line per test program; a sanitizer report fails its program.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/testlib.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The parent make's variables stay out of the child's (SANITIZE picks its own BUILD).
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD make --no-print-directory SANITIZE=1 unit-test >"$out" 2>&1
rc=$?
progs=$(grep -c '^=== ' "$out")
if [ "$progs" = 0 ]; then
	fail "sanitized unit tests" "nothing ran (make exited $rc): $(tail -5 "$out" | tr '\n' ' ')"
	exit 1
fi
awk '
/^=== / { if (name != "") print_result(); name = $2; synth = ""; rc = ""; san = 0; next }
/Synthesis:/ { synth = $0 }
/^EXIT: / { rc = $2 }
/ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:/ { san = 1 }
function print_result() {
	if (rc == "0" && synth != "" && !san)
		print "PASS: sanitized " name
	else
		print "FAIL: sanitized " name ": exit " rc (san ? ", a sanitizer report" : "") " (" synth ")"
}
END { if (name != "") print_result() }' "$out"
if grep -q '^FAIL\|ERROR: \|runtime error:' "$out"; then
	grep -B2 -A25 'ERROR: \|runtime error:' "$out" | head -120
fi
echo "(under the sanitizers: $(tail -1 "$out" | sed 's/,/ and/'))"
