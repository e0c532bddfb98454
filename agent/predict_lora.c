/* The predictor's price of a LoRA adapter's request on each server
 * (predict.h): what its scrape (vllm:lora_requests_info) and our own
 * sends say is there, against max_lora.
 *
 * vLLM keeps max_lora adapters in GPU slots, evicting the least recently
 * used one to load another; its metric names only the adapters with
 * requests. An adapter is taken as loaded where it has requests (scraped,
 * or sent by us since the scrape) or where it is among the max_lora
 * adapters most recently used there (our sends, and those the scrape
 * showed with requests, at the scrape's time). A slot is taken by an
 * adapter with requests only: an idle one is evicted for free. */
#include "predict_int.h"

/* A send the server's last scrape may not show: after it (less the
 * request's trip), or with no fresh scrape, within the last stale
 * period. */
static bool sent_counts(const struct dbk_pred *p, const struct pred_srv *s,
                        const struct pred_lora_sent *e, uint64_t now_ms)
{
	if (!e->key || now_ms < e->ms || now_ms - e->ms > p->c.scrape_stale_ms)
		return false;
	return !pred_fresh(p, s, now_ms) || e->ms + PRED_LORA_TRIP_MS >= s->scrape_ms;
}

static bool scraped_has(const struct pred_srv *s, uint64_t key)
{
	for (unsigned i = 0; i < s->sc.nlora; i++)
		if (s->sc.lora[i] == key)
			return true;
	return false;
}

static bool sent_has(const struct pred_srv *s, uint64_t key)
{
	for (unsigned i = 0; i < PRED_LORA_SENT; i++)
		if (s->lora_sent[i].key == key)
			return true;
	return false;
}

/* The adapters with requests on s: *running those that hold a slot (the
 * scrape's running ones and our sends since), *waiting those that wait
 * for one. True when adapter is among them. */
static bool pred_lora_count(const struct dbk_pred *p, const struct pred_srv *s, uint64_t adapter,
                            uint64_t now_ms, unsigned *running, unsigned *waiting)
{
	bool fresh = pred_fresh(p, s, now_ms), there = false;

	*running = fresh ? s->sc.nlora_running : 0;
	*waiting = fresh ? s->sc.nlora - s->sc.nlora_running : 0;
	if (fresh && adapter)
		there = scraped_has(s, adapter);
	for (unsigned i = 0; i < PRED_LORA_SENT; i++) {
		const struct pred_lora_sent *e = &s->lora_sent[i];

		if (!sent_counts(p, s, e, now_ms) || (fresh && scraped_has(s, e->key)))
			continue;
		(*running)++;
		there |= e->key == adapter;
	}
	return there;
}

/* Whether adapter is among the max_lora adapters used last on s: fewer
 * than max_lora others were used after our last send of it. */
static bool pred_lora_resident(const struct pred_srv *s, uint64_t adapter, double slots)
{
	const struct pred_lora_sent *e = NULL;
	double later = 0;

	for (unsigned i = 0; i < PRED_LORA_SENT; i++)
		if (s->lora_sent[i].key == adapter)
			e = &s->lora_sent[i];
	if (!e)
		return false;
	for (unsigned i = 0; i < PRED_LORA_SENT; i++)
		later += s->lora_sent[i].key && s->lora_sent[i].ms > e->ms;
	if (s->have_scrape && s->scrape_ms > e->ms)
		for (unsigned i = 0; i < s->sc.nlora; i++)
			later += !sent_has(s, s->sc.lora[i]);
	return later < slots;
}

/* A server that has not told max_lora (vLLM sets the metric at its
 * first step with LoRA) is taken to load a request's adapter unless it
 * was the last one sent there: its slots are not known, nor are they
 * known full. */
void dbk_pred_lora_price(const struct dbk_pred *p, const struct pred_srv *s, uint64_t adapter,
                         uint64_t now_ms, struct pred_lora_price *out)
{
	unsigned running, waiting;
	/* max_lora is the server's configuration: kept from a stale scrape. */
	double slots = s->have_scrape && s->sc.max_lora >= 1 ? s->sc.max_lora : 0;

	out->load_s = out->turns = 0;
	if (!adapter || pred_lora_count(p, s, adapter, now_ms, &running, &waiting))
		return;
	double taken = (double)running + waiting;
	if (slots && taken >= slots)
		out->turns = 1 + (taken - slots) / slots;
	else if (pred_lora_resident(s, adapter, slots ? slots : 1))
		return;
	out->load_s = p->c.lora_load_s;
}

void dbk_pred_lora_sent(struct pred_srv *s, uint64_t adapter, uint64_t now_ms)
{
	unsigned oldest = 0;

	if (!adapter)
		return;
	for (unsigned i = 0; i < PRED_LORA_SENT; i++) {
		if (s->lora_sent[i].key == adapter) {
			s->lora_sent[i].ms = now_ms;
			return;
		}
		if (s->lora_sent[i].ms < s->lora_sent[oldest].ms)
			oldest = i;
	}
	s->lora_sent[oldest] = (struct pred_lora_sent){ adapter, now_ms };
}

unsigned dbk_pred_lora_active(const struct dbk_pred *p, const struct pred_srv *s, uint64_t now_ms)
{
	unsigned running, waiting;

	pred_lora_count(p, s, 0, now_ms, &running, &waiting);
	return running + waiting;
}
