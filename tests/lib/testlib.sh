# Shared by the shell tests (tests/*/test_*.sh): the PASS:/FAIL: lines that
# tests/run.sh counts. Source it, say how many checks follow with
# `plan N` (run.sh fails a script that prints another number), call
# pass/fail per check, end with `exit $failed`.
failed=0
plan() { echo "PLAN: $1"; }
pass() { echo "PASS: $1"; }
fail() {
	echo "FAIL: $1: $2"
	failed=1
}
