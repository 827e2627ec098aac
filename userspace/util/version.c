// SPDX-License-Identifier: BSD-2-Clause
#include "version.h"

const char ebprof_version[] = EBPROF_VERSION;
const char ebprof_git_rev[] = EBPROF_GIT_REV;
const char ebprof_version_line[] = "ebprof " EBPROF_VERSION " (" EBPROF_GIT_REV ")";
