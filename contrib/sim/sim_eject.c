#include "sim_eject.h"

int dbk_sim_eject_init(struct dbk_outlier *o, unsigned n)
{
	struct dbk_outlier_config c;

	dbk_outlier_config_default(&c);
	return dbk_outlier_init(o, &c, n);
}

bool dbk_sim_eject_observe(struct dbk_outlier *o, const struct dbk_sim *s,
                           const struct dbk_sim_req *r, unsigned inst)
{
	const struct dbk_sim_outcome *oc = dbk_sim_outcome(s, r->id);
	enum dbk_outlier_verdict v = DBK_OUTLIER_SUCCESS;
	const char *why = NULL;
	struct dbk_outlier_change ch;
	unsigned others = 0, present = 0;

	if (oc->fail == DBK_SIM_FAIL_SERVER) {
		v = DBK_OUTLIER_FAILURE;
		why = "http-500";
	} else if (oc->fail != DBK_SIM_FAIL_NONE) {
		v = DBK_OUTLIER_IGNORE; /* a 400: the request's fault */
	}
	for (unsigned i = 0; v == DBK_OUTLIER_FAILURE && i < o->n; i++) {
		present += dbk_sim_usable(s, i);
		others += i != inst && dbk_sim_usable(s, i) && !dbk_outlier_ejected(o, i);
	}
	if (v == DBK_OUTLIER_FAILURE)
		dbk_outlier_set_fleet(o, present);
	return dbk_outlier_observe(o, inst, v, why, (uint64_t)(dbk_sim_now(s) * 1000.0 + 0.5),
	                           others, &ch);
}
