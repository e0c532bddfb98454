/* The admin endpoint's status page (GET /): one self-contained HTML file
 * that refreshes itself from /state, /config and /metrics. */
#ifndef DBK_STATUS_PAGE_H
#define DBK_STATUS_PAGE_H

#include "lib/buf.h"

/* Appends the page to o; its content type is "text/html; charset=utf-8". */
void dbk_status_page_write(struct dbk_buf *o);

#endif
