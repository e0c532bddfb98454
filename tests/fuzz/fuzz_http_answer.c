/* Fuzzes how lib/http_client reads an answer (dbk_hc_answer_step): the
 * framing on top of lib/http1, the chunked body decoded in place in the
 * read buffer, the body cap and interim answers.
 *
 * Input: one parameter byte b, then the bytes a server sent.
 *   b & 3:        max_body {1 MB, 0, 16, 256}
 *   (b >> 2) & 15: the bytes arrive in reads of 1 + that many
 *
 * Checked: the answer read in one piece and read in pieces comes to the
 * same (complete, incomplete or an error; the status, the body's bytes);
 * a complete one's body lies in the buffer, is at most max_body and is
 * followed by a NUL, and it ends within what was read; an error has a
 * reason. */
#include "fuzz.h"
#include "lib/buf.h"
#include "lib/http_client.h"

struct outcome {
	enum dbk_http_result r;
	int status;
	size_t body_len;
	uint64_t sum; /* of the body's bytes, in order */
};

static struct outcome read_answer(const char *p, size_t n, size_t max_body, size_t step)
{
	static struct dbk_hc_answer a;
	struct dbk_buf in;
	struct dbk_hc_result res;
	struct outcome o = { DBK_HTTP_INCOMPLETE, 0, 0, 0 };
	size_t i = 0, end = 0;

	dbk_buf_init(&in);
	dbk_hc_answer_init(&a, max_body);
	/* Each round appends at least one byte, or is the last (eof). */
	for (;;) {
		size_t k = n - i < step ? n - i : step;
		bool eof = k == 0;

		dbk_buf_add(&in, p + i, k);
		FUZZ_CHECK(!in.oom);
		i += k;
		o.r = dbk_hc_answer_step(&a, &in, eof, &res, &end);
		if (o.r != DBK_HTTP_INCOMPLETE || eof)
			break;
	}
	if (o.r == DBK_HTTP_ERROR)
		FUZZ_CHECK(a.err[0] != '\0');
	if (o.r == DBK_HTTP_COMPLETE) {
		FUZZ_CHECK(res.status >= 200 && res.status <= 999);
		FUZZ_CHECK(res.body_len <= max_body);
		FUZZ_CHECK(end <= in.len);
		FUZZ_CHECK(fuzz_inside(res.body, res.body_len, in.p, end));
		FUZZ_CHECK(res.body[res.body_len] == '\0');
		FUZZ_CHECK(in.p[end] == '\0');
		o.status = res.status;
		o.body_len = res.body_len;
		for (size_t m = 0; m < res.body_len; m++)
			o.sum = o.sum * 1099511628211u + (unsigned char)res.body[m];
	}
	dbk_buf_free(&in);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[4] = { 1 << 20, 0, 16, 256 };
	struct fuzz_in in = { data, size };
	uint8_t b = fuzz_u8(&in);
	size_t max_body = caps[b & 3], step = 1 + ((b >> 2) & 15);
	char *buf = (char *)fuzz_dup(in.p, in.n);
	struct outcome whole = read_answer(buf, in.n, max_body, in.n ? in.n : 1);
	struct outcome parts = read_answer(buf, in.n, max_body, step);

	FUZZ_CHECK(whole.r == parts.r);
	FUZZ_CHECK(whole.status == parts.status && whole.body_len == parts.body_len &&
	           whole.sum == parts.sum);
	free(buf);
	return 0;
}
