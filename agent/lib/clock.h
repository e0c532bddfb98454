/* The agent's two clocks. Leases age on the monotonic one, which never
 * jumps; completion lag compares with HAProxy's log timestamps, which
 * are wall-clock. */
#ifndef DBK_CLOCK_H
#define DBK_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t dbk_clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint64_t dbk_mono_ms(void) { return dbk_clock_ms(CLOCK_MONOTONIC); }

static inline uint64_t dbk_wall_ms(void) { return dbk_clock_ms(CLOCK_REALTIME); }

#endif
