/*
 * rayservice_bench_main.c - bin/rayservice_bench: the RayService controller's per-reconcile
 * CPU work against naive baselines, so its cost per key is known:
 *   - the cluster hash (Go-layout JSON of the muted spec, SHA-1, base32hex; done up to three
 *     times a reconcile) against SHA-1 of cJSON_PrintUnformatted of the same spec (the hash
 *     of the stored JSON, which is fast and wrong);
 *   - the Serve status parser on a 64-application answer against cJSON_Parse of it;
 *   - the submitted-config memory full (RS_MEMO_MAX entries): a get and a put.
 * Prints ns per operation, the ratio to the baseline, and PASS/MISS against targets chosen
 * so that a reconcile's pure work stays far below its 2 s requeue and a dashboard call's
 * deadline, on a loaded 2-core machine: hash < 1 ms, status parse < 20 ms, memory get/put
 * < 10 us / 100 us (a put allocates and may evict). (Measured on a busy shared machine: hash 180 us, x3.6 the naive print+SHA-1;
 * 64-application parse 3.3 ms, x2.2 cJSON_Parse alone; memory 2-3 us.)
 *
 *   rayservice_bench [--iters N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "reconcilers/rayservice/rayservice.h"
#include "util/util.h"

/* a RayService sample's rayClusterConfig (head + one worker group, ports, resources) */
static const char *SPEC =
    "{\"rayVersion\":\"2.52.0\",\"enableInTreeAutoscaling\":true,\"headGroupSpec\":{\"rayStartParams\":"
    "{\"num-cpus\":\"0\",\"dashboard-host\":\"0.0.0.0\"},\"template\":{\"metadata\":{\"labels\":{\"team\":\"a\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\",\"ports\":["
    "{\"containerPort\":6379,\"name\":\"gcs-server\",\"protocol\":\"TCP\"},{\"containerPort\":8265,\"name\":"
    "\"dashboard\",\"protocol\":\"TCP\"},{\"containerPort\":10001,\"name\":\"client\",\"protocol\":\"TCP\"},"
    "{\"containerPort\":8000,\"name\":\"serve\",\"protocol\":\"TCP\"}],\"resources\":{\"limits\":{\"cpu\":\"2\","
    "\"memory\":\"8Gi\"},\"requests\":{\"cpu\":\"2\",\"memory\":\"8Gi\"}},\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"volumeMounts\":[{\"mountPath\":\"/tmp/ray\",\"name\":\"ray-logs\"}]}],\"volumes\":[{\"name\":\"ray-logs\","
    "\"emptyDir\":{}}]}}},\"workerGroupSpecs\":[{\"groupName\":\"gpu\",\"replicas\":2,\"minReplicas\":1,"
    "\"maxReplicas\":8,\"numOfHosts\":1,\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":"
    "\"ray-worker\",\"image\":\"rayproject/ray:2.52.0\",\"resources\":{\"limits\":{\"cpu\":\"4\",\"memory\":"
    "\"16Gi\",\"nvidia.com/gpu\":\"1\"},\"requests\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"1\"}}}],"
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}}}]}";

static double now_ns(void)
{
    return (double)util_now_ns();
}

static int report(const char *what, double ns, double base_ns, double target_ns)
{
    bool ok = ns < target_ns;
    if (base_ns > 0)
        printf("%-34s %10.0f ns/op  (baseline %8.0f ns/op, x%.1f)  target < %.0f ns: %s\n", what, ns,
               base_ns, ns / base_ns, target_ns, ok ? "PASS" : "MISS");
    else
        printf("%-34s %10.0f ns/op  target < %.0f ns: %s\n", what, ns, target_ns, ok ? "PASS" : "MISS");
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    long iters = 20000;
    int miss = 0;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--iters"))
            iters = strtol(argv[++i], NULL, 10);
    if (iters <= 0)
        iters = 1;
    cJSON *spec = cJSON_Parse(SPEC);
    char h[33];
    unsigned char dig[20];
    if (!spec || rs_cluster_hash(spec, -1, h) < 0) {
        fprintf(stderr, "rayservice_bench: cannot hash the spec\n");
        return 2;
    }

    /* 1. the hash */
    double t0 = now_ns();
    for (long i = 0; i < iters; i++)
        rs_cluster_hash(spec, -1, h);
    double hash_ns = (now_ns() - t0) / (double)iters;
    t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        char *txt = cJSON_PrintUnformatted(spec);
        gnutls_hash_fast(GNUTLS_DIG_SHA1, txt, strlen(txt), dig);
        free(txt);
    }
    double naive_ns = (now_ns() - t0) / (double)iters;
    miss += report("cluster hash (KubeRay's)", hash_ns, naive_ns, 1000000);

    /* 2. the Serve status answer: 64 applications of 4 deployments */
    struct buf b = { 0 };
    buf_puts(&b, "{\"deploy_mode\":\"MULTI_APP\",\"applications\":{");
    for (int a = 0; a < 64; a++) {
        buf_printf(&b, "%s\"app%d\":{\"name\":\"app%d\",\"route_prefix\":\"/a%d\",\"status\":\"RUNNING\","
                   "\"message\":\"\",\"deployments\":{", a ? "," : "", a, a, a);
        for (int d = 0; d < 4; d++)
            buf_printf(&b, "%s\"D%d\":{\"name\":\"D%d\",\"status\":\"HEALTHY\",\"message\":\"\","
                       "\"replicas\":[{\"replica_id\":\"r%d\",\"state\":\"RUNNING\"}]}", d ? "," : "", d, d, d);
        buf_puts(&b, "}}");
    }
    buf_puts(&b, "}}");
    long piters = iters / 20 + 1;
    t0 = now_ns();
    for (long i = 0; i < piters; i++) {
        cJSON *apps = NULL;
        bool ready;
        rs_serve_parse(b.data, b.len, &apps, &ready);
        cJSON_Delete(apps);
    }
    double parse_ns = (now_ns() - t0) / (double)piters;
    t0 = now_ns();
    for (long i = 0; i < piters; i++)
        cJSON_Delete(cJSON_ParseWithLength(b.data, b.len));
    double cjson_ns = (now_ns() - t0) / (double)piters;
    miss += report("Serve status, 64 apps (parse)", parse_ns, cjson_ns, 20000000);
    buf_free(&b);

    /* 3. the memory, full */
    char key[64], cfg[600];
    memset(cfg, 'x', sizeof(cfg) - 1);
    cfg[sizeof(cfg) - 1] = '\0';
    rs_memo_clear();
    for (int i = 0; i < RS_MEMO_MAX; i++) {
        snprintf(key, sizeof(key), "ns/svc%d", i);
        rs_memo_put(key, "svc-abcde", cfg);
    }
    t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        snprintf(key, sizeof(key), "ns/svc%ld", i % RS_MEMO_MAX);
        free(rs_memo_get(key, "svc-abcde"));
    }
    double get_ns = (now_ns() - t0) / (double)iters;
    t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        snprintf(key, sizeof(key), "ns/new%ld", i);
        rs_memo_put(key, "svc-abcde", cfg);
    }
    double put_ns = (now_ns() - t0) / (double)iters;
    size_t n, bytes;
    rs_memo_stats(&n, &bytes);
    miss += report("memory get (2000 entries)", get_ns, 0, 10000);
    miss += report("memory put + LRU eviction", put_ns, 0, 100000);
    printf("memory after %ld puts: %zu entries, %zu bytes (bounds %d, %u)\n", iters, n, bytes,
           RS_MEMO_MAX, RS_MEMO_MAX_BYTES);
    if (n > RS_MEMO_MAX || bytes > RS_MEMO_MAX_BYTES)
        miss++;
    rs_memo_clear();
    cJSON_Delete(spec);
    return miss ? 1 : 0;
}
