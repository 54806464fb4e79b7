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
static void yq(struct buf *b, const char *s)
{
    buf_append_json_string(b, s);
}

char *kubeconfig_render(const struct kubeconfig_opts *o)
{
    struct buf b = { 0 };
    const char *name = o->name ? o->name : "kubesim";
    const char *ns = o->ns ? o->ns : "default";

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
    buf_puts(&b, "contexts:\n- name: ");
    yq(&b, name);
    buf_puts(&b, "\n  context:\n    cluster: ");
    yq(&b, name);
    buf_puts(&b, "\n    user: ");
    yq(&b, name);
    buf_puts(&b, "\n    namespace: ");
    yq(&b, ns);
    buf_puts(&b, "\ncurrent-context: ");
    yq(&b, name);
    buf_puts(&b, "\nusers:\n- name: ");
    yq(&b, name);
    if (o->token && *o->token) {
        buf_puts(&b, "\n  user:\n    token: ");
        yq(&b, o->token);
        buf_puts(&b, "\n");
    } else {
        buf_puts(&b, "\n  user: {}\n");
    }
    if (buf_puts(&b, "preferences: {}\n") < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
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
