#!/bin/sh
# The option lists of the man page come from the program's table of options
# (userspace/cli/option_table.c), as `ebprof help-man CMD...` prints them:
#
#   tools/man-options.sh EBPROF PAGE > OUT
#
# copies PAGE, putting in place of what stands between a line
#   .\" BEGIN OPTIONS: CMD [CMD...]
# and the next line
#   .\" END OPTIONS
# what `EBPROF help-man CMD...` prints; the rest of the page is copied as
# it is. `make man` rewrites packaging/ebprof.8 with it; the build stops
# when the page differs from what it makes ($(BUILD)/man.ok).
# Exit 0, or 1 naming what went wrong.
set -u
[ $# = 2 ] || { echo "usage: $0 EBPROF PAGE" >&2; exit 1; }
ebprof=$1 page=$2
[ -r "$page" ] || { echo "man-options: cannot read $page" >&2; exit 1; }
inside=0
while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	'.\" BEGIN OPTIONS: '*)
		[ $inside = 0 ] || { echo "man-options: $page: BEGIN OPTIONS inside another" >&2; exit 1; }
		printf '%s\n' "$line"
		# shellcheck disable=SC2086 # the commands named, one word each
		"$ebprof" help-man ${line#*: } || { echo "man-options: $ebprof help-man ${line#*: } failed" >&2; exit 1; }
		inside=1
		continue
		;;
	'.\" END OPTIONS'*) inside=0 ;;
	esac
	[ $inside = 1 ] || printf '%s\n' "$line"
done <"$page"
[ $inside = 0 ] || { echo "man-options: $page: BEGIN OPTIONS without END OPTIONS" >&2; exit 1; }
