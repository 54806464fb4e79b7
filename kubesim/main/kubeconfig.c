/*
 * kubeconfig.c - renders and writes kubesim's kubeconfig (see kubeconfig.h).
 * Strings go out as double-quoted YAML scalars so a token or URL with any byte
 * in it stays one scalar.
 */
#include "kubesim/main/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kobj/kobj.h"
#include "util/util.h"

static void base64(struct buf *b, const unsigned char *p, size_t n)
{
    if (buf_reserve(b, kobj_base64_len(n)) == 0) {
        kobj_base64_encode(p, n, b->data + b->len);
        b->len += kobj_base64_len(n) - 1;
    }
}

/* JSON string escaping is valid YAML double-quoted scalar syntax. */
static int yq(struct buf *b, const char *s)
{
    return buf_append_json_string(b, s);
}

char *kubeconfig_render(const struct kubeconfig_opts *o)
{
    struct buf b = { 0 }, qn = { 0 }, qns = { 0 };
    const char *name = o->name ? o->name : "kubesim";
    const char *ns = o->ns ? o->ns : "default";
    char *text = NULL;

    buf_puts(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: ");
    yq(&b, name);
    buf_puts(&b, "\n  cluster:\n    server: ");
    yq(&b, o->server_url);
    buf_puts(&b, "\n");
    if (o->ca_pem && o->ca_len) {
        buf_puts(&b, "    certificate-authority-data: ");
        base64(&b, (const unsigned char *)o->ca_pem, o->ca_len);
        buf_puts(&b, "\n");
    } else {
        buf_puts(&b, "    insecure-skip-tls-verify: true\n");
    }
    /* one context, named like the cluster and the user */
    if (yq(&qn, name) < 0 || yq(&qns, ns) < 0)
        goto out;
    buf_printf(&b, "contexts:\n- name: %s\n  context:\n    cluster: %s\n    user: %s\n"
               "    namespace: %s\ncurrent-context: %s\nusers:\n- name: %s",
               qn.data, qn.data, qn.data, qns.data, qn.data, qn.data);
    if (o->token && *o->token) {
        buf_puts(&b, "\n  user:\n    token: ");
        yq(&b, o->token);
        buf_puts(&b, "\n");
    } else {
        buf_puts(&b, "\n  user: {}\n");
    }
    if (buf_puts(&b, "preferences: {}\n") == 0)
        text = buf_steal(&b);
out:
    buf_free(&b);
    buf_free(&qn);
    buf_free(&qns);
    return text;
}

int kubeconfig_write(const char *path, const struct kubeconfig_opts *o)
{
    char tmp[4096];
    char *text = kubeconfig_render(o);
    int fd = -1, rc = 0;

    if (!text)
        return -ENOMEM;
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp)) {
        rc = -ENAMETOOLONG;
        goto out;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    if ((rc = util_write_all(fd, text, strlen(text))) < 0)
        goto out;
    if (fsync(fd) < 0) {
        rc = -errno;
        goto out;
    }
    rc = close(fd) < 0 ? -errno : 0;
    fd = -1;
    if (rc < 0)
        goto out;
    if (rename(tmp, path) < 0)
        rc = -errno;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    free(text);
    return rc;
}
