#include "pool_pick.h"

#include <string.h>

#include "prefix_key.h"

static bool is_text(const struct dbk_spop_data *d)
{
	return d && (d->type == DBK_SPOP_T_STR || d->type == DBK_SPOP_T_BIN) && d->u.buf.len;
}

/* The pool whose backend is named v, or -1. */
static int by_name(const struct dbk_pool *pools, unsigned n, const struct dbk_spop_data *v)
{
	for (unsigned i = 0; i < n; i++)
		if (strlen(pools[i].cfg.backend) == v->u.buf.len &&
		    memcmp(pools[i].cfg.backend, v->u.buf.ptr, v->u.buf.len) == 0)
			return (int)i;
	return -1;
}

/* The body sample's model: the first pool with servers that list it,
 * else the first with no filter for it. */
static int by_model(struct dbk_pool *pools, unsigned n, const struct dbk_spop_data *body)
{
	const uint8_t *model;
	size_t len;
	int any = -1;

	if (!is_text(body) || !dbk_pkey_model(body->u.buf.ptr, body->u.buf.len, &model, &len))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct dbk_pool *p = &pools[i];

		if (!p->models) {
			if (any < 0)
				any = (int)i;
			continue;
		}
		/* route.eligible is the pool's scratch: the pool's route
		 * fills it again when it decides. */
		switch (dbk_models_pick(p->models, model, len, p->route.eligible)) {
		case DBK_MODELS_SOME: return (int)i;
		case DBK_MODELS_ANY:
			/* Every server a candidate: a known one lists it. */
			if (dbk_models_some_known(p->models))
				return (int)i;
			if (any < 0)
				any = (int)i;
			break;
		case DBK_MODELS_NONE: break;
		}
	}
	return any < 0 ? 0 : any;
}

static int by_lease(const struct dbk_pool *pools, unsigned n, const struct dbk_spop_data *id)
{
	if (!is_text(id))
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (dbk_bal_holds(pools[i].bal, (const char *)id->u.buf.ptr, id->u.buf.len))
			return (int)i;
	return 0;
}

int dbk_pool_pick(struct dbk_pool *pools, unsigned n, const struct dbk_spop_message *m)
{
	const struct dbk_spop_data *be = dbk_spop_msg_arg(m, DBK_ARG_BACKEND);

	if (is_text(be))
		return by_name(pools, n, be);
	if (n == 1)
		return 0;
	if (dbk_spop_name_is(m->name, m->name_len, DBK_MSG_MOVED))
		return by_lease(pools, n, dbk_spop_msg_arg(m, DBK_ARG_ID));
	return by_model(pools, n, dbk_spop_msg_arg(m, DBK_ARG_BODY));
}
