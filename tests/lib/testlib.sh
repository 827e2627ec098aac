# Shared by the shell tests (tests/*/test_*.sh): the PASS:/FAIL: lines that
# tests/run.sh counts. Source it, call pass/fail per check, end with
# `exit $failed`.
failed=0
pass() { echo "PASS: $1"; }
fail() {
	echo "FAIL: $1: $2"
	failed=1
}
