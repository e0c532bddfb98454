/* What an OpenAI streaming response says, message by message: when the
 * first and last choices arrived, the gaps between them, the usage
 * chunk's token count, whether [DONE] came. Pure: the caller passes the
 * time each event was read. */
#ifndef DBK_BENCH_STREAM_H
#define DBK_BENCH_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dbk_stream {
	double t0;            /* just before the request was sent */
	double first, last;   /* first and last choices message */
	size_t n_msgs;        /* messages with non-empty choices */
	size_t max_msgs;      /* more is an error (bounds the ITL array) */
	uint64_t n_text;      /* of them, those carrying text */
	int64_t usage_tokens; /* usage.completion_tokens, -1 if none */
	bool done;            /* data: [DONE] */
	double *itl;
	size_t n_itl, cap_itl;
	char error[160]; /* why the stream is unusable, "" if it is */
};

/* max_msgs: max_tokens plus slack for the chat role chunk and a final
 * empty chunk; each token is at most one message. */
void dbk_stream_init(struct dbk_stream *s, double t0, size_t max_msgs);
void dbk_stream_free(struct dbk_stream *s);

/* One SSE event's data read at time t. 0, or -1 with s->error set: a bad
 * chunk, an error object from the server, too many messages. */
int dbk_stream_event(struct dbk_stream *s, const char *data, size_t n, double t);

/* After the response ended: true with TTFT, E2E (from t0) and output
 * tokens (usage, else text-carrying messages) if the stream is complete
 * (it had choices and [DONE]); false with the reason in err otherwise. */
bool dbk_stream_result(const struct dbk_stream *s, double *ttft, double *e2e, uint32_t *tokens,
                       char *err, size_t errn);

/* Hands the ITL array over to the caller (who frees it). */
double *dbk_stream_take_itl(struct dbk_stream *s, size_t *n);

/* "HTTP 400: <message>" for an error response, the message taken from
 * vLLM's {"message": ...} / {"error": {"message": ...}} / FastAPI's
 * {"detail": ...} when the (possibly truncated) body holds one, else
 * the body's first bytes; bytes other than printable ASCII become '?'. */
void dbk_stream_error_summary(int status, const char *body, size_t n, char *out, size_t outn);

#endif
