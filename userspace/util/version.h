/* SPDX-License-Identifier: BSD-2-Clause */
/* The version of this build, from VERSION and git (version.c is rebuilt
 * whenever either changes, nothing else is). */
#ifndef EBPROF_VERSION_H
#define EBPROF_VERSION_H

extern const char ebprof_version[];	 /* "0.1.0" */
extern const char ebprof_git_rev[];	 /* short commit id, "unknown" outside git */
extern const char ebprof_version_line[]; /* "ebprof 0.1.0 (abc1234)" */

#endif /* EBPROF_VERSION_H */
