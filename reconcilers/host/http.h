/*
 * http.h - the host's listen-address parser and the one libmicrohttpd reply
 * helper of its /metrics and probe endpoints (http.c, opts.c). Public because
 * `rayop webhook` listens and answers through them too.
 */
#ifndef RAYOP_HOST_HTTP_H
#define RAYOP_HOST_HTTP_H

#include <stddef.h>

#include <microhttpd.h>

/* One MHD answer (body copied). Shared with `rayop webhook`. */
enum MHD_Result host_http_reply(struct MHD_Connection *conn, unsigned code, const char *type,
                                const char *body, size_t len);
/* Splits a listen address "host:port" / ":port" / "0" (disabled: *port = -1).
 * 0 or -EINVAL. */
int host_parse_addr(const char *s, char *host, size_t hostcap, int *port);

#endif
