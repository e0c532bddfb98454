/* Growable arrays, one way to make room: doubling (lib/buf's bytes,
 * the simulator's policy scratch, predictor queue and radix nodes). */
#ifndef DBK_ARRAY_H
#define DBK_ARRAY_H

#include <stddef.h>

/* Room for element n of an array of *cap elements of size bytes: arr
 * itself when n < *cap, else arr moved to twice the capacity (first when
 * it was empty) and *cap raised. NULL when memory ran short: arr and
 * *cap are as they were. Usage:
 *   T *a = dbk_array_room(x->a, &x->cap, x->n, sizeof(*a), 64);
 *   if (!a) return -1;
 *   x->a = a; */
void *dbk_array_room(void *arr, size_t *cap, size_t n, size_t size, size_t first);

#endif
