/* Books shared between several HAProxy nodes' agents through one of
 * HAProxy's own stick tables, replicated by its `peers` (issue 31; no
 * protocol of ours). Each agent writes a row per server of what it sent
 * there and has not seen end, keyed "<node>/<server>"; every agent reads
 * the whole table and charges the other nodes' requests to its policy's
 * books as the simulator's --lb-share-ms --lb-share-books does: each at
 * the cost its sender priced it, net of the prefix the sender expected
 * cached there, but no prefix recorded (where sessions went is the
 * session table's, session_hint.h; BENCHMARKS.md, "Sharing what a
 * request costs net of its prefix").
 *
 * A row, in the data types HAProxy 2.6's `set table` writes one by one
 * (`data.gpt[i]`, an array element, is 3.2's):
 *   gpt0          requests in flight
 *   gpc0          their prompt tokens
 *   gpc1          their context tokens (prompt + half the output: the
 *                 predictor's ticket, predict.h)
 *   http_req_cnt  charges begun there by the node (wraps at 2^32): with
 *                 it a reader tells a request that ended and one that
 *                 started between two reads from no change at all; a
 *                 request taken back and charged again (estimate_hold.h)
 *                 counts twice, as its sender books its prefill anew
 *   bytes_in_cnt  the KV their requests take, net of the hit the node
 *                 expected (the ticket's kv_tokens: prompt - hit +
 *                 output). A long prompt mostly cached there costs its
 *                 few new tokens, not its whole length: charged whole, a
 *                 cached conversation's turn weighs many times its load
 *                 on every other node. A table that does not store it
 *                 (an older haproxy.cfg) gets the other four, and a
 *                 reader without it charges prompts whole, as before.
 * haproxy.cfg:
 *   stick-table type string len 64 size 4k expire 10s peers P
 *       store gpt0,gpc0,gpc1,http_req_cnt,bytes_in_cnt
 *
 * Pure: no sockets, no clock (time is passed in). The module wraps the
 * agent's running policy (struct dbk_policy): every hook is forwarded;
 * commit, release and move also keep this node's per-server sums, which
 * dbk_share_write_cmd turns into `set table` commands. dbk_share_read
 * takes a `show table` answer and books the other nodes' new requests
 * with the policy's complete (a ticket, slot words 0-2: prompt, KV and
 * context tokens, booked as priced; the ttft family's) or, without one,
 * seen (the load, priced here), and releases those that ended, or whose
 * row is gone (expired: the node or its agent stopped). */
#ifndef DBK_BOOKS_SHARE_H
#define DBK_BOOKS_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy_ops.h"

/* A node name: [A-Za-z0-9_.-], 1 to this many bytes. */
#define DBK_SHARE_MAX_NODE 32
/* Other nodes followed at most (those past it are ignored, and said). */
#define DBK_SHARE_MAX_NODES 16
/* Requests in flight a row may claim; more is read as this many. */
#define DBK_SHARE_MAX_ROW_INFLIGHT 4096u

/* One row of a `show table` answer. key points into the answer. */
struct dbk_share_row {
	const char *key;
	size_t key_len;
	uint32_t inflight, prompt, ctx, started, kv;
	bool has_all; /* gpt0, gpc0, gpc1 and http_req_cnt were in the row */
	bool has_kv;  /* and bytes_in_cnt */
};

/* Walks a `show table` answer: its "# table: NAME, ..." header, then one
 * row a line ("0x...: key=K use=N exp=N name=value ..."). Returns the
 * number of rows passed to cb, or -1 with a one-line reason in err (not
 * an answer to show table: HAProxy's error text is quoted). Pure; the
 * answer need not be NUL-terminated. */
typedef void (*dbk_share_row_cb)(void *arg, const struct dbk_share_row *row);
int dbk_share_parse(const char *buf, size_t len, dbk_share_row_cb cb, void *arg, char *err,
                    size_t errlen);

/* Is name a valid node name? */
bool dbk_share_node_ok(const char *name);

struct dbk_share;

/* Wraps p (started, with a seen or complete hook): from now on p->ops and p->st are
 * the share's, forwarding to the policy that was there, and
 * dbk_policy_stop(p) frees both. node is this node's name (copied).
 * Returns the share, or NULL with err (no seen hook, bad name, memory). */
struct dbk_share *dbk_share_wrap(struct dbk_policy *p, unsigned nservers, const char *node,
                                 char *err, size_t errlen);

/* Writes into out (cap bytes, NUL-terminated) the `set table` commands,
 * ';'-separated, for this node's rows that changed since they were last
 * written, or were last written refresh_ms ago or more (a row unwritten
 * for the table's expire is dropped by HAProxy, as a stopped agent's
 * must be), as many as fit, the longest unwritten first. names[i] is
 * server i's name ("" for a free slot, skipped). Returns the length, 0
 * when nothing is due; dbk_share_written then says they were written. */
size_t dbk_share_write_cmd(struct dbk_share *s, const char *table, const char *const *names,
                           uint64_t now_ms, uint64_t refresh_ms, char *out, size_t cap);
void dbk_share_written(struct dbk_share *s, uint64_t now_ms);
/* HAProxy answered that the table does not store bytes_in_cnt: the rows
 * are written without it from now on. */
void dbk_share_no_kv(struct dbk_share *s);

/* Reads a `show table` answer (dbk_share_parse) at now_ms: the other
 * nodes' rows are charged to, or released from, the policy's books.
 * Returns 0, or -1 with err (nothing changed). */
int dbk_share_read(struct dbk_share *s, const char *buf, size_t len, const char *const *names,
                   unsigned nnames, uint64_t now_ms, char *err, size_t errlen);

struct dbk_share_stats {
	uint64_t reads, writes;   /* answers taken, command batches written */
	uint64_t seen, released;  /* the others' requests charged, ended */
	unsigned nodes;           /* other nodes with a row in the last read */
	unsigned others_inflight; /* their requests in the books now */
	unsigned unknown_rows;    /* rows of the last read naming no server */
};
const struct dbk_share_stats *dbk_share_stats(const struct dbk_share *s);

#endif
