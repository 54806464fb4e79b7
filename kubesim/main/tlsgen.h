/*
 * tlsgen.h - generates the CA and serving certificate kubesim --tls uses (GnuTLS),
 * written as PEM files next to the kubeconfig so clients can verify the server.
 */
#ifndef RAYOP_SIM_TLSGEN_H
#define RAYOP_SIM_TLSGEN_H

/* Writes DIR/ca.crt, DIR/ca.key (0600), DIR/server.crt, DIR/server.key (0600). The server
 * certificate has SANs 127.0.0.1, ::1, localhost (plus host when it is a name or an IP).
 * Reuses an existing CA in DIR when both its files are present. 0 or negative errno. */
int tlsgen_write(const char *dir, const char *host);

#endif
