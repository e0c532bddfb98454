/* The status page is agent/status_page.html, turned into a C string at
 * build time (contrib/package.mk, contrib/embed.awk): the agent serves it
 * with no file to install or find, and the page stays plain HTML to edit. */
#include "status_page.h"

static const char page[] = {
#include "status_page.inc"
};

void dbk_status_page_write(struct dbk_buf *o) { dbk_buf_add(o, page, sizeof(page) - 1); }
