/* fuzz_runtime.c - the Pod runtime's parsers and builders (kubesim/runtime) on outside bytes.
 * The first byte picks the target; the rest is:
 *   0: an image reference for runtime__image_match;
 *   1: "K=V" lines, a blank line, then a text for $(VAR) expansion (runtime__env_expand, with the
 *      lines as the environment, each expanded in turn as build_env does);
 *   2: a downward-API fieldPath for runtime__field_value on a fixed Pod;
 *   3: an emptyDir sizeLimit quantity for runtime__size_text;
 *   4: an HTTP response head for runtime__http_status (length-bounded, not NUL-terminated);
 *   5: "METHOD\nPATH\nCTYPE\nACCEPT" for runtime__forward_check;
 *   6: JSON taken as an Endpoints object (runtime__svc_endpoint), as a container with probes
 *      (runtime__port_of, runtime__probe_reset/apply driven by the JSON's own bytes) and as the exec
 *      helper's spec (runtime__spec_check).
 * Every input must give a result or an error: no crash, no read past the input, no
 * unbounded growth, no undefined arithmetic (UBSan). */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/runtime/internal.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_env(char *s)
{
    cJSON *env = cJSON_CreateArray();
    char *text = strstr(s, "\n\n"), *line, *save = NULL;
    struct buf b = { 0 };

    if (!env)
        return;
    if (text) {
        *text = '\0';
        text += 2;
    } else {
        text = s + strlen(s);
    }
    for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        buf_reset(&b);
        if (!eq)
            continue;
        buf_append(&b, line, (size_t)(eq - line + 1));
        if (runtime__env_expand(env, eq + 1, &b) == 0 && b.data)
            cJSON_AddItemToArray(env, cJSON_CreateString(b.data));
    }
    buf_reset(&b);
    if (runtime__env_expand(env, text, &b) == 0 && b.len > 2 * RT_ENV_MAX_VALUE + 2)
        abort();
    buf_free(&b);
    cJSON_Delete(env);
}

static void fuzz_json(const char *s)
{
    cJSON *o = cJSON_Parse(s);
    struct rt_ctr c = { 0 };
    char ip[INET_ADDRSTRLEN], err[128];
    int port;
    bool kill;
    struct in_addr ia;

    if (!o)
        return;
    for (unsigned n = 0; n < 3; n++) {
        const char *names[] = { "", "http", "web" };
        if (runtime__svc_endpoint(o, names[n], n, ip, sizeof(ip), &port) == 0 &&
            (inet_pton(AF_INET, ip, &ia) != 1 || port <= 0 || port > 65535))
            abort();
    }
    c.spec = o;
    c.live.spec = kobj_get(o, "livenessProbe");
    c.rdy.spec = kobj_get(o, "readinessProbe");
    c.live.exec_fd = c.rdy.exec_fd = -1;
    (void)runtime__port_of(&c, kobj_get(kobj_get(c.rdy.spec, "httpGet"), "port"));
    (void)runtime__port_of(&c, kobj_get(kobj_get(c.live.spec, "tcpSocket"), "port"));
    runtime__probe_reset(&c, 1000);
    (void)runtime__probe_next(&c);
    for (const char *p = s; *p && p - s < 64; p++) {
        struct rt_probe *pr = (*p & 1) ? &c.live : &c.rdy;
        if (pr->spec)
            (void)runtime__probe_apply(&c, pr, (*p & 2) != 0, &kill);
    }
    (void)runtime__spec_check(o, err, sizeof(err));
    cJSON_Delete(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, out[64];
    struct buf b = { 0 };
    int code;

    if (!(s = fuzz_text(data, size, 65536)))
        return 0;
    switch (data[0] % 7) {
    case 0: {
        struct runtime_opts o = { .nimages = 3 };
        strcpy(o.repo[0], "rayop");
        strcpy(o.repo[1], "team/demo");
        strcpy(o.repo[2], "a");
        int i = runtime__image_match(&o, s);
        if (i < -1 || i > 2)
            abort();
        break;
    }
    case 1:
        fuzz_env(s);
        break;
    case 2: {
        struct rt_pod p = { .uid = "u", .ns = "ns", .name = "p", .ip = "10.244.0.1" };
        p.json = cJSON_Parse("{\"metadata\":{\"labels\":{\"a\":\"b\",\"k'x\":\"v\"},"
                             "\"annotations\":{\"n\":\"m\"}},\"spec\":{\"nodeName\":\"n0\"}}");
        (void)runtime__field_value(&p, s, &b);
        cJSON_Delete(p.json);
        break;
    }
    case 3:
        runtime__size_text(s, out, sizeof(out));
        break;
    case 4: {
        /* the exact bytes, without the copy's terminator */
        char *exact = malloc(size - 1 ? size - 1 : 1);
        if (exact) {
            memcpy(exact, data + 1, size - 1);
            if (runtime__http_status(exact, size - 1, &code) == 0 && (code < 0 || code > 999))
                abort();
            free(exact);
        }
        break;
    }
    case 5: {
        char *f[4] = { s, NULL, NULL, NULL };
        for (int i = 1; i < 4 && f[i - 1]; i++)
            if ((f[i] = strchr(f[i - 1], '\n')))
                *f[i]++ = '\0';
        (void)runtime__forward_check(f[0], f[1] ? f[1] : "/", f[2], f[3]);
        break;
    }
    default:
        fuzz_json(s);
        break;
    }
    buf_free(&b);
    free(s);
    return 0;
}
