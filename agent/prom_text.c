#include "prom_text.h"

#include <inttypes.h>

void dbk_prom_head(struct dbk_buf *o, const char *name, const char *type, const char *help)
{
	dbk_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void dbk_prom_histogram(struct dbk_buf *o, const char *name, const char *help,
                        const struct dbk_histo *h, double scale)
{
	uint64_t cum = 0;

	dbk_prom_head(o, name, "histogram", help);
	for (unsigned i = 0; i < h->nbounds; i++) {
		cum += h->counts[i];
		dbk_buf_printf(o, "%s_bucket{le=\"%.6g\"} %" PRIu64 "\n", name,
		               h->bounds[i] * scale, cum);
	}
	dbk_buf_printf(o,
	               "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.17g\n%s_count %" PRIu64 "\n",
	               name, h->count, name, h->sum * scale, name, h->count);
}
