/* Growing arrays: the one helper of the offline layers' tables. */
#ifndef GT_GROW_H
#define GT_GROW_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Room for `need` elements of `size` bytes in the array at *pp of *cap elements: the capacity
 * doubles (from 16) until it holds them, the new elements zeroed.  false when memory runs out
 * (the array is then as it was). */
static inline bool gt_grow(void *pp, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *n = realloc(*(void **)pp, c * size);
	if (!n)
		return false;
	memset((char *)n + *cap * size, 0, (c - *cap) * size);
	*(void **)pp = n;
	*cap = c;
	return true;
}

#endif
