/* Which models each server of one pool serves, as its /v1/models lists
 * them (base models and LoRA adapters, vllm_metrics.h), and which
 * servers a request for a model may go to.
 *
 * A server is in one of three states: its list is known (it serves
 * exactly what it lists), unknown (not scraped yet, or its /v1/models
 * failed or was refused: a candidate for every model, so that a fleet
 * whose models are not known routes as it did before), or absent (a free
 * slot: a candidate too, never usable). Ids are interned once per pool:
 * a request's lookup is one hash and a probe or two, and the servers
 * that list an id are a bitset, so a decision's candidates cost n/64
 * words.
 *
 * Pure (no I/O, no clock, no globals) and bounded: at most
 * DBK_MODELS_MAX distinct ids per pool; a server whose list would go
 * past that stays unknown (counted). One pool is one struct dbk_models;
 * the caller owns it. */
#ifndef DBK_MODELS_H
#define DBK_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vllm_metrics.h"

/* Distinct ids (models and adapters) one pool keeps. */
#define DBK_MODELS_MAX 1024

enum dbk_models_state { DBK_MODELS_UNKNOWN = 0, DBK_MODELS_KNOWN, DBK_MODELS_ABSENT };

/* Who may serve a request's model. */
enum dbk_models_pick {
	DBK_MODELS_ANY,  /* every server is a candidate: no filter */
	DBK_MODELS_SOME, /* only the servers in the set */
	DBK_MODELS_NONE, /* no server lists it and every present one is known */
};

struct dbk_models_stats {
	unsigned ids;   /* distinct ids interned now */
	uint64_t full;  /* lists left unknown: the id table was full */
	uint64_t lists; /* lists taken */
};

struct dbk_models;

/* A pool of nservers slots (> 0), every one unknown. NULL: out of memory. */
struct dbk_models *dbk_models_new(unsigned nservers);
void dbk_models_free(struct dbk_models *m);

/* Server's list is now l (what /v1/models just said). 0, or -1 when the
 * pool's id table is full: the server is then unknown. */
int dbk_models_set(struct dbk_models *m, unsigned server, const struct dbk_vm_models *l);
/* The server in the slot is another one, or its list is no longer
 * trusted: unknown until its next list. */
void dbk_models_forget(struct dbk_models *m, unsigned server);
/* The slot is free. */
void dbk_models_absent(struct dbk_models *m, unsigned server);

enum dbk_models_state dbk_models_state(const struct dbk_models *m, unsigned server);
/* Whether some server's list is known: then DBK_MODELS_ANY means a
 * known server lists the model, not only that no list is read yet. */
bool dbk_models_some_known(const struct dbk_models *m);
/* Server's i-th model (i < its count) and its parent ("" for a base
 * model); NULL past the end or when its list is not known. */
const char *dbk_models_id(const struct dbk_models *m, unsigned server, unsigned i,
                          const char **parent);
/* Words of a candidate set: (nservers + 63) / 64. */
unsigned dbk_models_words(const struct dbk_models *m);

/* The candidates for a request naming model id[0..len): the servers that
 * list it (as a base model or an adapter) and those whose list is not
 * known. DBK_MODELS_SOME fills set (dbk_models_words words, bit s for
 * server s); ANY and NONE leave it alone. */
enum dbk_models_pick dbk_models_pick(const struct dbk_models *m, const uint8_t *id, size_t len,
                                     uint64_t *set);

/* Whether id[0..len) is a LoRA adapter: some server lists it with a
 * parent that is listed too. */
bool dbk_models_adapter(const struct dbk_models *m, const uint8_t *id, size_t len);

const struct dbk_models_stats *dbk_models_stats(const struct dbk_models *m);

#endif
