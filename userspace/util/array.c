// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "array.h"

int array_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *a;

	if (need <= *cap)
		return 0;
	ncap = *cap > SIZE_MAX / 2 ? need : *cap * 2;
	if (ncap < need)
		ncap = need;
	if (ncap < 16)
		ncap = 16;
	if (!elem || ncap > SIZE_MAX / elem)
		return -ENOMEM;
	a = realloc(*arr, ncap * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = ncap;
	return 0;
}
