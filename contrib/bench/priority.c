/* Priority classes of a run: see priority.h. */
#include "priority.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/log.h"

static int parse_item(const char *s, size_t len, struct dbk_prio_mix *m, char *err, size_t errn)
{
	const char *eq = memchr(s, '=', len);
	size_t nl = eq ? (size_t)(eq - s) : 0;
	char num[32], *end;

	if (!eq || nl == 0 || nl >= sizeof(m->name[0]) || len - nl - 1 == 0 ||
	    len - nl - 1 >= sizeof(num))
		return dbk_errf(err, errn, "priority class '%.*s': want CLASS=WEIGHT", (int)len, s),
		       -1;
	for (size_t i = 0; i < nl; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' && s[i] != '_')
			return dbk_errf(err, errn,
			                "priority class '%.*s': a name of letters, digits, - _",
			                (int)len, s),
			       -1;
	memcpy(num, eq + 1, len - nl - 1);
	num[len - nl - 1] = '\0';
	double w = strtod(num, &end);
	if (*end || !(w > 0) || !isfinite(w))
		return dbk_errf(err, errn, "priority class '%.*s': the weight must be > 0",
		                (int)len, s),
		       -1;
	memcpy(m->name[m->n], s, nl);
	m->name[m->n][nl] = '\0';
	m->w[m->n++] = w;
	return 0;
}

int dbk_prio_parse(const char *spec, struct dbk_prio_mix *m, char *err, size_t errn)
{
	memset(m, 0, sizeof(*m));
	for (const char *p = spec;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (m->n == DBK_PRIO_MAX)
			return dbk_errf(err, errn, "at most %d priority classes", DBK_PRIO_MAX), -1;
		if (parse_item(p, len, m, err, errn) != 0)
			return -1;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

uint8_t dbk_prio_of(const struct dbk_prio_mix *m, uint64_t seed, size_t i)
{
	uint64_t st = dbk_hash_fmix64(seed ^ dbk_hash_fmix64((uint64_t)i + 0x9e3779b97f4a7c15ull));
	double total = 0, u;

	if (m->n == 0)
		return DBK_PRIO_NONE;
	for (size_t k = 0; k < m->n; k++)
		total += m->w[k];
	u = dbk_hash_unit(&st) * total;
	for (size_t k = 0; k + 1 < m->n; k++) {
		if (u < m->w[k])
			return (uint8_t)k;
		u -= m->w[k];
	}
	return (uint8_t)(m->n - 1);
}

void dbk_prio_report(FILE *f, const struct dbk_prio_mix *m, const struct dbk_result *r, size_t n,
                     const struct dbk_slo *slo, double duration)
{
	double *ttft = malloc((n ? n : 1) * sizeof(*ttft));

	if (!ttft || m->n == 0) {
		free(ttft);
		return;
	}
	fprintf(f, "\n%-12s %8s %8s %8s %8s %8s %9s %10s %10s\n", "class", "requests", "served",
	        "429", "failed", "good", "good/s", "ttft p50", "ttft p99");
	for (size_t k = 0; k < m->n; k++) {
		size_t req = 0, ok = 0, shed = 0, failed = 0, good = 0, nt = 0;
		struct dbk_dist d;

		for (size_t i = 0; i < n; i++) {
			if (r[i].prio != k)
				continue;
			req++;
			if (r[i].ok) {
				ok++;
				ttft[nt++] = r[i].ttft;
				good += dbk_stats_slo_met(slo, &r[i]);
			} else if (r[i].status == 429) {
				shed++;
			} else if (r[i].done) {
				failed++;
			}
		}
		dbk_stats_dist(ttft, nt, &d);
		fprintf(f, "%-12s %8zu %8zu %8zu %8zu %8zu %9.2f %8.0fms %8.0fms\n", m->name[k],
		        req, ok, shed, failed, good, duration > 0 ? (double)good / duration : 0,
		        d.median * 1e3, d.p99 * 1e3);
	}
	free(ttft);
}
