/* Growable arrays; see array.h. */
#include "lib/array.h"

#include <stdint.h>
#include <stdlib.h>

void *dbk_array_room(void *arr, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t c = *cap;
	void *na;

	if (n < c)
		return arr;
	while (c <= n)
		c = c ? c * 2 : first;
	if (c > SIZE_MAX / size)
		return NULL;
	na = realloc(arr, c * size);
	if (na)
		*cap = c;
	return na;
}
