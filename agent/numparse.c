#include "numparse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

bool dbk_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (!s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool dbk_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s)
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}
