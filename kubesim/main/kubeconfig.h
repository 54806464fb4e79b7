/*
 * kubeconfig.h - writes the kubeconfig kubesim hands to clients (kubectl 1.20/1.33,
 * python3-kubernetes, client-node; see docs/kubesim.md). Plain http carries
 * insecure-skip-tls-verify: true (client-node refuses http:// without it); https
 * embeds the CA as certificate-authority-data and never skips verification.
 */
#ifndef RAYOP_SIM_KUBECONFIG_H
#define RAYOP_SIM_KUBECONFIG_H

#include <stddef.h>

struct kubeconfig_opts {
    const char *server_url;   /* "http://127.0.0.1:PORT" or "https://..." */
    const char *ca_pem;       /* CA certificate PEM (https), or NULL */
    size_t ca_len;
    const char *token;        /* bearer token, or NULL */
    const char *name;         /* cluster/context/user name, default "kubesim" */
    const char *ns;           /* context namespace, default "default" */
};

/* Renders the kubeconfig YAML into a new string (caller frees). NULL on -ENOMEM. */
char *kubeconfig_render(const struct kubeconfig_opts *o);
/* Writes it to path atomically (temporary file + rename), mode 0600. 0 or -errno. */
int kubeconfig_write(const char *path, const struct kubeconfig_opts *o);

#endif
