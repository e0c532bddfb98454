/* Routing: turns a NOTIFY's messages into balancer calls and the ACK's
 * set-var actions. Knows SPOP's data model and the balancer, not sockets,
 * clocks or logs: a pure module. The SPOP glue (route_handler.h) hands
 * it a parsed frame, the time and a writer, and logs what it reports. */
#ifndef DBK_ROUTE_H
#define DBK_ROUTE_H

#include <stdint.h>

#include "admission.h"
#include "balancer.h"
#include "estimate_hold.h"
#include "models.h"
#include "policy_ops.h"
#include "saturation.h"
#include "lib/spop_codec.h"

/* The message and argument names haproxy/dbucket.spoe.conf sends. */
#define DBK_MSG_ROUTE "dbucket-route"
#define DBK_MSG_MOVED "dbucket-moved"
#define DBK_ARG_SERVER "server"
#define DBK_ARG_ID "id"
#define DBK_ARG_BLEN "blen"
#define DBK_ARG_BODY "body"
/* Optional: the body bytes HAProxy held when it asked (req.body_len).
 * Below blen, the body was still on its way: the request's prefill
 * charge may be taken back while its server shows it has not arrived,
 * or strict, held back until it shows it has (hold below,
 * estimate_hold.h). Absent: charged for blen, as always. */
#define DBK_ARG_ARRIVED "arrived"
/* Optional: how many Content-Length headers the request has
 * (req.hdr_cnt(content-length)). 0: the body came chunked, or from an
 * HTTP/2 client that stated no length, and blen is only what HAProxy
 * held plus the rest of the chunk it was reading: unless the sample is
 * the whole JSON body, the prompt is at least that long and maybe far
 * longer: a policy that chooses sends it only to the servers with the
 * longest context, the length buckets take it for the longest bucket's
 * (unsized_bodies). Absent: blen is taken as the length, as before. */
#define DBK_ARG_CLEN "clen"
/* Optional: a client's session (e.g. its X-Session-Id header); else the
 * body's OpenAI "user" field is the session. Read by a policy that
 * chooses (policy_ops.h). */
#define DBK_ARG_SESSION "session"
/* True (a bool, a non-zero integer, or the string "1"): also answer with
 * the decision's details (bucket, group, redirected, score; under a
 * policy that predicts, ttft's, also its prediction: ttft_ms,
 * hit_tokens). Off by default: each variable costs HAProxy a lookup and
 * an allocation per request, and only logs and debug headers read them. */
#define DBK_ARG_DETAILS "details"
/* Optional: the request's priority class, as haproxy.cfg sets it
 * (critical, standard, sheddable; admission.h's dbk_class_parse). None,
 * or one not known, is standard: never an error, counted as bad_class
 * when present but not known. */
#define DBK_ARG_CLASS "class"

/* Variable names set in the ACK (HAProxy prefixes them with the
 * spoe-agent's var-prefix: txn.dbucket.server, ...). Server always; the
 * next four when the message asks for details, and the two after them
 * too under a policy that predicts (the first token's predicted time
 * there, in whole ms, and the prompt tokens expected from its prefix
 * cache), so a log line can set the prediction beside what happened. */
#define DBK_VAR_SERVER "server"
#define DBK_VAR_BUCKET "bucket"
#define DBK_VAR_GROUP "group"
#define DBK_VAR_REDIRECTED "redirected"
#define DBK_VAR_SCORE "score"
#define DBK_VAR_TTFT_MS "ttft_ms"
#define DBK_VAR_HIT_TOKENS "hit_tokens"
#define DBK_VAR_ERROR "error"
#define DBK_VAR_MOVED "moved"
/* With several pools (route.pick): the backend whose pool took a route
 * message, for the frontend's use_backend. */
#define DBK_VAR_BACKEND "backend"
/* A request admission refuses (--admission): action is "shed" and
 * retry_after the seconds for the Retry-After header; no server is set
 * and no lease taken, and HAProxy answers 429 itself. */
#define DBK_VAR_ACTION "action"
#define DBK_VAR_RETRY_AFTER "retry_after"
#define DBK_ACTION_SHED "shed"
/* Model routing (models.h): no server lists the request's model (HAProxy
 * answers 404 as vLLM does, NotFoundError), or every server that serves
 * it is unusable (503). Neither takes a lease nor sets a server. */
#define DBK_ACTION_UNKNOWN_MODEL "unknown_model"
#define DBK_ACTION_MODEL_UNAVAILABLE "model_unavailable"

struct dbk_route_stats {
	uint64_t notifies;
	uint64_t routed;
	uint64_t unknown_messages;
	uint64_t no_id;            /* route message without a usable id */
	uint64_t refused;          /* balancer said no: duplicate, full, ... */
	uint64_t truncated_bodies; /* body sample shorter than the body */
	uint64_t malformed_bodies;
	uint64_t unsized_bodies; /* length only a floor (DBK_ARG_CLEN) */
	uint64_t moved;          /* leases moved to the server HAProxy used */
	uint64_t too_long;       /* the policy found no usable server to hold it */
	/* Route messages by class: routed (a lease taken), refused by
	 * admission by reason, and class values not known (then standard). */
	uint64_t admitted[DBK_CLASS_N];
	uint64_t shed[DBK_CLASS_N][DBK_SHED_NREASONS];
	uint64_t bad_class;
	/* Model routing: requests whose candidates were narrowed to the
	 * servers serving their model, refused for a model no server lists,
	 * and for one whose servers are all unusable. */
	uint64_t model_filtered;
	uint64_t unknown_model;
	uint64_t model_unavailable;
	/* Decisions by standard bucket (row) and chosen group (column). */
	uint64_t by_bucket_group[DBK_BAL_MAX_BUCKETS][DBK_BAL_MAX_BUCKETS];
};

/* One decision the balancer made, told to the caller (to log it). */
struct dbk_route_event {
	const uint8_t *id;
	size_t id_len;
	enum dbk_bal_result res;           /* DBK_BAL_OK: routed */
	const struct dbk_bal_request *req; /* what was estimated */
	const struct dbk_bal_decision *d;  /* when routed */
	uint64_t now_ms;
	enum dbk_class cls;
	/* Refused by admission (no lease: res is DBK_BAL_OK and d NULL);
	 * admit says why and for how long. */
	bool shed;
	const struct dbk_admit_result *admit;
	const struct dbk_route *route; /* the route that decided (its names) */
	/* The request's model, when model routing read it (else NULL). */
	const uint8_t *model;
	size_t model_len;
};

struct dbk_route {
	struct dbk_balancer *bal;
	/* The routing policy (policy_ops.h): when it chooses, the balancer
	 * takes the lease where it chose. NULL, or a policy without
	 * choose: the reference algorithm decides, as the parity vectors
	 * record. */
	const struct dbk_policy *policy;
	const char *const *names; /* server names by balancer index */
	unsigned nnames;
	uint64_t *by_server; /* decisions per server; may be NULL */
	/* Admission (admission.h): NULL or not enabled, every request is
	 * routed as before. sat: the fleet's saturation, for policies that
	 * do not predict; NULL: never saturated. */
	const struct dbk_admit_config *admit;
	struct dbk_admit_state admit_state; /* admission's memory (zeroed) */
	const struct dbk_saturation *sat;
	/* Which server serves which model (models.h): NULL, every server is
	 * a candidate for every request. eligible: dbk_models_words of
	 * scratch, the candidates of the request being decided. */
	const struct dbk_models *models;
	uint64_t *eligible;
	/* Partial-body charges (estimate_hold.h): NULL, every request is
	 * charged its announced length. Under a policy that chooses and
	 * holds (policy_ops.h), its books follow: held back (strict) or
	 * taken back (dbk_route_taken), then completed by dbk_route_whole. */
	struct dbk_hold *hold;
	/* Called for every decision, routed or refused; NULL: nobody
	 * listens. */
	void (*on_decision)(void *arg, const struct dbk_route_event *e);
	void *decision_arg;
	/* Several pools (pool_pick.h): the route of the pool a message is
	 * for and its backend's name, or NULL when none is (the message is
	 * answered txn.<prefix>.error "unknown-backend"). NULL pick: this
	 * route takes every message. */
	struct dbk_route *(*pick)(void *arg, const struct dbk_spop_message *m,
	                          const char **backend);
	void *pick_arg;
	struct dbk_route_stats stats;
};

/* The largest ACK a NOTIFY of n messages can need: the frame header, and
 * per message seven set-vars (short names, a server name of at most 64
 * bytes, four ints, a bool, a score). */
#define DBK_ROUTE_ACK_MAX(n) (32 + ((n) ? (n) : 1) * (7 * 16 + 64 + 5 * 12 + 32))
/* ... and with pick, per message the backend's name (at most 64 bytes). */
#define DBK_ROUTE_ACK_POOL(n) (((n) ? (n) : 1) * (16 + 64))

/* Handles one NOTIFY frame: writes the ACK's actions into w, an ACK the
 * caller began with dbk_spop_ack_begin and ends with dbk_spop_frame_end
 * (never an empty one: a message that yields no variable sets
 * txn.<prefix>.error). Returns DBK_SPOP_OK, or the status to DISCONNECT
 * with when the payload is malformed (DBK_SPOP_ERR_INVALID) or
 * DBK_ROUTE_ACK_MAX of its messages exceeds w's room (DBK_SPOP_ERR_RES);
 * in both cases before deciding anything, so no lease is taken. */
enum dbk_spop_status dbk_route_notify(struct dbk_route *r, const struct dbk_spop_frame *f,
                                      uint64_t now_ms, struct dbk_spop_writer *w);

/* The held-back charge of id's lease was made whole (estimate_hold.h's
 * whole callback) at now_ms: a policy that holds charges its books now
 * (policy_ops.h's complete). Nothing for a lease not held by the
 * policy, or gone. */
void dbk_route_whole(struct dbk_route *r, const char *id, size_t id_len, uint64_t now_ms);

/* The prefill charge of id's lease was taken back (estimate_hold.h's
 * taken callback): a policy that holds gives back what it booked, as if
 * the lease had ended the moment it began (nothing learnt from its
 * time, which counts the body's way), and the lease is held from then on
 * (policy_ops.h's DBK_POLICY_HELD) until dbk_route_whole books it again.
 * Nothing for a policy that cannot hold, a lease held already, or gone. */
void dbk_route_taken(struct dbk_route *r, const char *id, size_t id_len);

#endif
