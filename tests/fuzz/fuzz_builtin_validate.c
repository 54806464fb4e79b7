/*
 * fuzz_builtin_validate.c - libFuzzer target for the defaults and 422 validation
 * of built-in objects (kubesim/store/defaults.c, kubesim/schema/builtin_validate.c, the label
 * and annotation checks of kubesim/store/meta.c) on request bodies.
 * The first byte picks the type (Pod, Service, Job); the rest is a create body,
 * then, after the first newline, an update body for the same object. Each must
 * be stored or refused with a Status, never crash, leak or read past the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/registry/registry.h"
#include "kubesim/store/store.h"
#include "util/util.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const PLURALS[][2] = { { "", "pods" }, { "", "services" },
                                          { "batch", "jobs" },
                                          { "networking.k8s.io", "networkpolicies" } };

/* Writes one body; returns the stored object's name or NULL (caller frees). */
static char *write_one(struct store *s, const struct reg_resource *res, const char *body,
                       const char *name)
{
    struct store_status st = { 0 };
    struct store_obj *o = NULL;
    cJSON *j = cJSON_Parse(body);
    char *out = NULL;
    int rc;

    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return NULL;
    }
    if (name)
        rc = store_update(s, res, "default", name, NULL, j, NULL, &o, &st);
    else
        rc = store_create(s, res, "default", j, NULL, &o, &st);
    if (rc == 0 && o && o->name)
        out = strdup(o->name);
    store_obj_unref(o);
    store_status_clear(&st);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct registry *reg = NULL;
    struct store *s = NULL;
    struct store_opts o = { .watch_window = 16 };
    const struct reg_resource *res;
    char err[256], *text, *nl, *name;

    log_set_level(LOG_ERROR + 1);
    if (!(text = fuzz_text(data, size, 1u << 16)))
        return 0;
    nl = strchr(text, '\n');
    if (nl)
        *nl++ = '\0';
    if (registry_new(&reg) || store_open(&o, reg, &s, err, sizeof(err)))
        goto out;
    res = registry_find(store_registry_rdlock(s), PLURALS[data[0] % 4][0], "v1",
                        PLURALS[data[0] % 4][1]);
    store_registry_unlock(s);
    name = res ? write_one(s, res, text, NULL) : NULL;
    if (name && nl)
        free(write_one(s, res, nl, name));
    free(name);
    store_close(s);
out:
    free(text);
    return 0;
}
