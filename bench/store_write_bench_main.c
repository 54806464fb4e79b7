/*
 * store_write_bench_main.c - bin/store_write_bench, the CPU cost of kubesim's store write path.
 *
 * In one process, without HTTP: a store, then N RayCluster-like Pods each taken through the
 * writes the simulated cluster makes of a Pod at scale (create as the operator, the
 * scheduler's bind patch, three kubelet status patches: scheduled, ContainerCreating,
 * Ready) and one Event create per Pod, from one thread inside a tree scope trimmed to
 * 16 MiB per Pod, as the cluster thread reads. Prints the thread's CPU time per write of
 * each kind, so a change to create, patch, managedFields, the no-op test, printing,
 * packing, compression or the watch ring shows here without the noise of a whole bench.
 *
 *   bin/store_write_bench [--pods N] [--pod FILE]
 *
 * FILE is a Pod JSON (default: the KubeRay head Pod fixture of the unit tests).
 * Exit status 0, or 2 on a usage or setup error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kubesim/registry/registry.h"
#include "kubesim/store/store.h"

#define DEFAULT_POD "tests/unit/fixtures/raycluster/sample-head-pod.json"

enum { K_CREATE, K_BIND, K_STATUS, K_EVENT, K_N };
static const char *const kind_names[K_N] = { "pod create", "bind patch", "status patch",
                                             "event create" };

static double thread_cpu(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (b = malloc((size_t)n + 1)) && fread(b, 1, (size_t)n, f) == (size_t)n)
        b[n] = 0;
    else {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* The kubelet's status of a Pod at stage 0 (scheduled), 1 (ContainerCreating), 2 (Ready). */
static cJSON *pod_status(int stage, int i)
{
    static const char *const conds[] = { "PodReadyToStartContainers", "Initialized", "Ready",
                                         "ContainersReady", "PodScheduled" };
    cJSON *body = cJSON_CreateObject(), *s = cJSON_AddObjectToObject(body, "status");
    cJSON *cl = cJSON_AddArrayToObject(s, "conditions"), *cs, *c, *st;
    char ip[32];

    cJSON_AddStringToObject(s, "phase", stage == 2 ? "Running" : "Pending");
    for (int k = stage ? 0 : 4; k < 5; k++) {
        bool ok = stage == 2 || k == 1 || k == 4;
        c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "type", conds[k]);
        cJSON_AddStringToObject(c, "status", ok ? "True" : "False");
        cJSON_AddNullToObject(c, "lastProbeTime");
        cJSON_AddStringToObject(c, "lastTransitionTime",
                                stage == 2 ? "2026-01-01T00:00:05Z" : "2026-01-01T00:00:01Z");
        if (!ok) {
            cJSON_AddStringToObject(c, "reason", "ContainersNotReady");
            cJSON_AddStringToObject(c, "message", "containers with unready status: [ray-head]");
        }
        cJSON_AddItemToArray(cl, c);
    }
    if (!stage)
        return body;
    snprintf(ip, sizeof(ip), "10.%d.%d.%d", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    cJSON_AddStringToObject(s, "hostIP", "172.18.0.2");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "hostIPs"), c = cJSON_CreateObject());
    cJSON_AddStringToObject(c, "ip", "172.18.0.2");
    cJSON_AddStringToObject(s, "podIP", ip);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(s, "podIPs"), c = cJSON_CreateObject());
    cJSON_AddStringToObject(c, "ip", ip);
    cJSON_AddStringToObject(s, "startTime", "2026-01-01T00:00:01Z");
    cs = cJSON_AddArrayToObject(s, "containerStatuses");
    cJSON_AddItemToArray(cs, c = cJSON_CreateObject());
    cJSON_AddStringToObject(c, "name", "ray-head");
    st = cJSON_AddObjectToObject(c, "state");
    if (stage == 2) {
        cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "running"), "startedAt",
                                "2026-01-01T00:00:03Z");
        cJSON_AddStringToObject(c, "containerID", "containerd://00000000000000000000000000001");
        cJSON_AddStringToObject(c, "imageID", "docker.io/rayproject/ray@sha256:0123456789abcdef");
    } else {
        cJSON_AddStringToObject(cJSON_AddObjectToObject(st, "waiting"), "reason",
                                "ContainerCreating");
    }
    cJSON_AddObjectToObject(c, "lastState");
    cJSON_AddBoolToObject(c, "ready", stage == 2);
    cJSON_AddNumberToObject(c, "restartCount", 0);
    cJSON_AddBoolToObject(c, "started", stage == 2);
    cJSON_AddStringToObject(c, "image", "rayproject/ray:2.52.0");
    return body;
}

static cJSON *event(const char *ns, const char *pod, int i)
{
    cJSON *ev = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(ev, "metadata"), *io;
    char name[300];

    snprintf(name, sizeof(name), "%s.%016x", pod, (unsigned)i);
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ns);
    io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "kind", "Pod");
    cJSON_AddStringToObject(io, "namespace", ns);
    cJSON_AddStringToObject(io, "name", pod);
    cJSON_AddStringToObject(io, "apiVersion", "v1");
    cJSON_AddStringToObject(ev, "reason", "Scheduled");
    cJSON_AddStringToObject(ev, "message", "Successfully assigned pod to node-7");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(ev, "source"), "component",
                            "default-scheduler");
    cJSON_AddStringToObject(ev, "firstTimestamp", "2026-01-01T00:00:01Z");
    cJSON_AddStringToObject(ev, "lastTimestamp", "2026-01-01T00:00:01Z");
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(ev, "type", "Normal");
    return ev;
}

int main(int argc, char **argv)
{
    const char *pod_path = DEFAULT_POD, *ns = "default";
    long pods = 5000;
    struct registry *reg = NULL;
    struct store *s = NULL;
    struct store_opts so = { .watch_window = 5000 };
    const struct reg_resource *rpod, *rev;
    double cpu[K_N] = { 0 }, t0;
    long n[K_N] = { 0 }, failed = 0;
    char err[256], *text, *hash;
    cJSON *tmpl;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pods") && i + 1 < argc)
            pods = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--pod") && i + 1 < argc)
            pod_path = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--pods N] [--pod FILE]\n", argv[0]);
            return 2;
        }
    }
    text = read_file(pod_path);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", pod_path);
        return 2;
    }
    while ((hash = strstr(text, "@HASH@")))
        memcpy(hash, "abcdef", 6);
    tmpl = cJSON_Parse(text);
    free(text);
    if (!tmpl || pods <= 0 || registry_new(&reg) ||
        store_open(&so, reg, &s, err, sizeof(err))) {
        fprintf(stderr, "setup failed\n");
        return 2;
    }
    rpod = registry_find(store_registry_rdlock(s), "", "v1", "pods");
    rev = registry_find(store_registry_rdlock(s), "", "v1", "events");
    store_registry_unlock(s);
    store_registry_unlock(s);
    store_tree_scope_begin();
    for (long i = 0; i < pods; i++) {
        struct store_write_opts wop = { .field_manager = "rayop" };
        struct store_write_opts wsc = { .field_manager = "kube-scheduler" };
        struct store_write_opts wkl = { .field_manager = "kubelet" };
        struct store_write_opts wev = { .field_manager = "kubesim" };
        struct store_status st = { 0 };
        struct store_obj *out = NULL;
        cJSON *pod = cJSON_Duplicate(tmpl, true), *md = cJSON_GetObjectItem(pod, "metadata");
        char name[64], body[128];
        int rc;

        snprintf(name, sizeof(name), "rc-%ld-head-%05lx", i, i);
        cJSON_DeleteItemFromObject(md, "generateName");
        /* the owner is not stored here: the GC would delete the Pod as a dangling dependent */
        cJSON_DeleteItemFromObject(md, "ownerReferences");
        cJSON_AddStringToObject(md, "name", name);
        t0 = thread_cpu();
        rc = store_create(s, rpod, ns, pod, &wop, &out, &st);
        cpu[K_CREATE] += thread_cpu() - t0;
        n[K_CREATE]++;
        if (rc < 0 && failed++ < 3)
            fprintf(stderr, "write failed: %s\n", st.message);
        store_obj_unref(out);
        store_status_clear(&st);

        snprintf(body, sizeof(body), "{\"spec\":{\"nodeName\":\"node-%ld\"}}", i % 300);
        out = NULL;
        t0 = thread_cpu();
        rc = store_patch(s, rpod, ns, name, NULL, PATCH_MERGE, body, strlen(body), &wsc, &out,
                         NULL, &st);
        cpu[K_BIND] += thread_cpu() - t0;
        n[K_BIND]++;
        if (rc < 0 && failed++ < 3)
            fprintf(stderr, "write failed: %s\n", st.message);
        store_obj_unref(out);
        store_status_clear(&st);

        t0 = thread_cpu();
        rc = store_create(s, rev, ns, event(ns, name, (int)i), &wev, NULL, &st);
        cpu[K_EVENT] += thread_cpu() - t0;
        n[K_EVENT]++;
        if (rc < 0 && failed++ < 3)
            fprintf(stderr, "write failed: %s\n", st.message);
        store_status_clear(&st);

        for (int stage = 0; stage < 3; stage++) {
            cJSON *p = pod_status(stage, (int)i);
            out = NULL;
            t0 = thread_cpu();
            rc = store_patch_json(s, rpod, ns, name, "status", PATCH_MERGE, p, &wkl, &out,
                                  NULL, &st);
            cpu[K_STATUS] += thread_cpu() - t0;
            n[K_STATUS]++;
            if (rc < 0 && failed++ < 3)
            fprintf(stderr, "write failed: %s\n", st.message);
            store_obj_unref(out);
            store_status_clear(&st);
        }
        store_tree_scope_trim(16u << 20);
    }
    store_tree_scope_end();
    {
        double all = 0;
        long alln = 0;
        for (int k = 0; k < K_N; k++) {
            printf("%-13s %7ld writes  %7.2f us CPU each\n", kind_names[k], n[k],
                   n[k] ? cpu[k] * 1e6 / n[k] : 0);
            all += cpu[k];
            alln += n[k];
        }
        printf("%-13s %7ld writes  %7.2f us CPU each, %.3f s in all, %ld failed\n", "all", alln,
               all * 1e6 / alln, all, failed);
    }
    cJSON_Delete(tmpl);
    store_close(s);
    return failed ? 1 : 0;
}
