/*
 * codec.c - how an API object becomes the bytes a cache slot holds, and back.
 *
 * 1. cache_trim drops, in place, what the trim table below lists: fields the
 *    server keeps for its own bookkeeping and no controller reads.
 * 2. cache_encode writes msgpack (via msgpack-c's packer) with three
 *    substitutions that make a Pod about a third of its JSON size:
 *      - a map key found in the compiled-in key dictionary is written as its
 *        index (a positive integer: JSON keys are always strings, so an integer
 *        key can only mean the dictionary);
 *      - a string value found in the value dictionary is written as
 *        ext(type 1, 1 byte index);
 *      - a string of 5+ bytes already written earlier in the same object is
 *        written as ext(type 2, 2 byte big-endian index) into the list of
 *        literal strings of 5+ bytes in order of appearance (the FQDN, image
 *        and start command repeat within a Ray Pod).
 *    Both dictionaries are part of the segment layout: changing them means
 *    bumping CACHE_LAYOUT_VERSION.
 * 3. cache_decode is the bounded, total inverse into cJSON: depth <= 64, every
 *    length and count checked against the bytes left, indexes checked against
 *    the tables - any input yields a tree or -EIO.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "cache/internal.h"
#include "util/util.h"

#define CODEC_MAX_DEPTH 64
#define CODEC_REF_MIN   5
#define CODEC_MAX_REFS  65535u
#define EXT_VALUE_DICT  1
#define EXT_STRING_REF  2

/* ---- trim table ------------------------------------------------------------- */

struct trim_rule {
    const char *path[4]; /* NULL-terminated; the last element is removed */
};

/* Why each entry is safe to drop: docs/cache.md "Trim table". */
static const struct trim_rule trim_table[] = {
    { { "metadata", "managedFields", NULL } },
    { { "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration", NULL } },
    { { "metadata", "selfLink", NULL } },
};

void cache_trim(cJSON *obj)
{
    for (size_t i = 0; i < sizeof(trim_table) / sizeof(trim_table[0]); i++) {
        const char *const *path = trim_table[i].path;
        cJSON *parent = obj;
        size_t k = 0;
        while (parent && path[k + 1]) {
            parent = cJSON_GetObjectItemCaseSensitive(parent, path[k]);
            k++;
        }
        if (parent && cJSON_IsObject(parent))
            cJSON_DeleteItemFromObjectCaseSensitive(parent, path[k]);
    }
}

/* ---- dictionaries ------------------------------------------------------------ */

/* Most frequent first: indexes < 128 take one byte. Layout-versioned. */
static const char *const dict_keys[] = {
    "apiVersion", "kind", "metadata", "name", "namespace", "uid", "resourceVersion",
    "generation", "creationTimestamp", "labels", "annotations", "ownerReferences",
    "controller", "blockOwnerDeletion", "spec", "status", "containers", "image",
    "imagePullPolicy", "ports", "containerPort", "protocol", "resources", "limits",
    "requests", "cpu", "memory", "env", "value", "valueFrom", "fieldRef", "fieldPath",
    "volumeMounts", "mountPath", "volumes", "emptyDir", "medium", "sizeLimit", "command",
    "args", "type", "lastTransitionTime", "lastProbeTime", "reason", "message",
    "conditions", "hostIP", "hostIPs", "podIP", "podIPs", "ip", "startTime",
    "containerStatuses", "initContainerStatuses", "initContainers", "ready",
    "restartCount", "state", "running", "terminated", "waiting", "startedAt",
    "finishedAt", "exitCode", "lastState", "imageID", "containerID", "started", "phase",
    "qosClass", "readOnly", "recursiveReadOnly", "terminationMessagePath",
    "terminationMessagePolicy", "livenessProbe", "readinessProbe", "startupProbe",
    "exec", "httpGet", "tcpSocket", "path", "port", "initialDelaySeconds",
    "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold",
    "lifecycle", "preStop", "restartPolicy", "terminationGracePeriodSeconds",
    "dnsPolicy", "serviceAccountName", "serviceAccount", "nodeName", "securityContext",
    "schedulerName", "tolerations", "key", "operator", "effect", "tolerationSeconds",
    "priority", "enableServiceLinks", "preemptionPolicy", "projected", "sources",
    "serviceAccountToken", "expirationSeconds", "configMap", "items", "downwardAPI",
    "defaultMode", "generateName", "deletionTimestamp", "deletionGracePeriodSeconds",
    "finalizers", "selector", "matchLabels", "template", "replicas", "targetPort",
    "clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "sessionAffinity",
    "internalTrafficPolicy", "loadBalancer", "observedGeneration",
    /* from about here on: two bytes */
    "app.kubernetes.io/created-by", "app.kubernetes.io/name", "ray.io/cluster",
    "ray.io/group", "ray.io/identifier", "ray.io/is-ray-node", "ray.io/node-type",
    "ray.io/ft-enabled", "ray.io/originated-from-cr-name",
    "ray.io/originated-from-crd", "headGroupSpec", "workerGroupSpecs", "groupName",
    "minReplicas", "maxReplicas", "numOfHosts", "rayStartParams", "rayVersion",
    "enableInTreeAutoscaling", "autoscalerOptions", "suspend", "serviceType",
    "headServiceAnnotations", "entrypoint", "runtimeEnvYAML", "jobId",
    "shutdownAfterJobFinishes", "ttlSecondsAfterFinished", "rayClusterSpec",
    "submitterPodTemplate", "submissionMode", "activeDeadlineSeconds",
    "backoffLimit", "jobStatus", "jobDeploymentStatus", "dashboardURL",
    "rayClusterName", "rayClusterStatus", "endTime", "serveConfigV2",
    "serviceUnhealthySecondThreshold", "deploymentUnhealthySecondThreshold",
    "upgradeStrategy", "activeServiceStatus", "pendingServiceStatus",
    "serviceStatus", "numServeEndpoints", "availableWorkerReplicas",
    "desiredWorkerReplicas", "readyWorkerReplicas", "desiredCPU", "desiredMemory",
    "desiredGPU", "desiredTPU", "minWorkerReplicas", "maxWorkerReplicas",
    "lastUpdateTime", "endpoints", "head", "podName", "serviceIP", "stateTransitionTimes",
    "completions", "parallelism", "succeeded", "failed", "active", "completionTime",
    "podFailurePolicy", "completionMode", "manualSelector", "podReplacementPolicy",
    "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
    "controller-uid", "job-name", "nodeSelector", "affinity", "hostname", "subdomain",
    "appProtocol", "nodePort", "publishNotReadyAddresses", "externalTrafficPolicy",
    "supplementalGroups", "fsGroup", "runAsUser", "runAsGroup", "runAsNonRoot",
    "capabilities", "add", "drop", "privileged", "allowPrivilegeEscalation",
    "workingDir", "envFrom", "secretKeyRef", "configMapKeyRef", "optional",
    "secret", "secretName", "persistentVolumeClaim", "claimName", "hostPath",
    "stdin", "tty", "imagePullSecrets", "runtimeClassName", "priorityClassName",
    "topologySpreadConstraints", "overhead", "resourceClaims", "allocatedResources",
    "user", "linux", "gid", "resize",
};

/* Whole values frequent in Pods, Services and Ray objects (>= 4 bytes to pay off). */
static const char *const dict_values[] = {
    "IfNotPresent", "Always", "Never", "File", "FallbackToLogsOnError",
    "/dev/termination-log", "TCP", "UDP", "True", "False", "Unknown", "ClusterFirst",
    "default-scheduler", "NoExecute", "NoSchedule", "Exists", "Equal",
    "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
    "metadata.namespace", "metadata.name", "metadata.labels['ray.io/cluster']",
    "metadata.labels['ray.io/group']", "kube-root-ca.crt", "ca.crt", "token",
    "/var/run/secrets/kubernetes.io/serviceaccount", "PreemptLowerPriority",
    "Running", "Pending", "Succeeded", "Failed", "Guaranteed", "Burstable",
    "BestEffort", "Disabled", "Memory", "PodScheduled", "Initialized", "Ready",
    "ContainersReady", "PodReadyToStartContainers", "ray.io/v1", "RayCluster",
    "RayJob", "RayService", "kuberay-operator", "kuberay", "worker", "head",
    "/bin/bash", "/bin/sh", "bash", "ray stop", "shared-mem", "/dev/shm", "metrics",
    "dashboard", "client", "serve", "gcs-server", "default", "ClusterIP",
    "SingleStack", "None", "Cluster", "Local", "IPv4", "IPv6", "batch/v1", "Job",
    "Service", "Pod", "Completed", "Error", "ContainerCreating", "PodInitializing",
    "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "OOMKilled",
    "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success",
    "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success && wget --tries 1 -T 2 -q -O- http://localhost:8265/api/gcs_healthz | grep success",
    "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_CLOUD_INSTANCE_ID",
    "RAY_NODE_TYPE_NAME", "KUBERAY_GEN_RAY_START_CMD", "RAY_PORT", "RAY_ADDRESS",
    "RAY_USAGE_STATS_KUBERAY_IN_USE", "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
    "RAY_USAGE_STATS_EXTRA_TAGS", "FQ_RAY_IP", "RAY_IP", "wait-gcs-ready",
    "ray-worker", "ray-head", "autoscaler", "6379", "8265", "10001", "8000",
    "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "PENDING", "Complete", "Suspended",
    "Initializing", "Retrying", "HeadPodReady", "RayClusterProvisioned",
    "RayClusterSuspended", "RayClusterSuspending", "ReplicaFailure", "yes",
    "Orphan", "Background", "Foreground", "containerd://", "HTTP", "HTTPS",
};

_Static_assert(sizeof(dict_keys) / sizeof(dict_keys[0]) <= 65536, "key dict fits uint16");
_Static_assert(sizeof(dict_values) / sizeof(dict_values[0]) <= 256, "value dict fits a byte");

#define NKEYS   (sizeof(dict_keys) / sizeof(dict_keys[0]))
#define NVALUES (sizeof(dict_values) / sizeof(dict_values[0]))

/*
 * String -> index lookups for the encoder: one open-addressing table per
 * dictionary, built on first use. The writer is one thread, but the build is
 * guarded with call_once-like atomics so a reader process encoding (tests,
 * bench) in threads stays correct.
 */
struct strtab_ent {
    uint64_t h;
    const char *s;
    uint32_t len;
    uint32_t idx; /* index + 1; 0 = empty */
};

struct strtab {
    struct strtab_ent *ents;
    uint32_t mask;
    uint32_t n;
    bool heap; /* ents is malloc'd (else the caller's, e.g. on its stack) */
};

static int strtab_init(struct strtab *t, uint32_t cap_pow2)
{
    t->ents = calloc(cap_pow2, sizeof(*t->ents));
    if (!t->ents)
        return -ENOMEM;
    t->mask = cap_pow2 - 1;
    t->n = 0;
    t->heap = true;
    return 0;
}

static uint32_t strtab_find(const struct strtab *t, const char *s, size_t len, uint64_t h)
{
    for (uint32_t i = (uint32_t)h & t->mask, probes = 0; probes <= t->mask;
         i = (i + 1) & t->mask, probes++) {
        const struct strtab_ent *e = &t->ents[i];
        if (!e->idx)
            return 0;
        if (e->h == h && e->len == len && memcmp(e->s, s, len) == 0)
            return e->idx;
    }
    return 0;
}

static int strtab_grow(struct strtab *t);

/* Inserts s (not copied: it must outlive the table) with index idx. */
static int strtab_put(struct strtab *t, const char *s, size_t len, uint64_t h, uint32_t idx)
{
    if ((t->n + 1) * 2 > t->mask + 1) {
        int rc = strtab_grow(t);
        if (rc)
            return rc;
    }
    uint32_t i = (uint32_t)h & t->mask;
    while (t->ents[i].idx)
        i = (i + 1) & t->mask;
    t->ents[i] = (struct strtab_ent){ .h = h, .s = s, .len = (uint32_t)len, .idx = idx };
    t->n++;
    return 0;
}

static int strtab_grow(struct strtab *t)
{
    struct strtab old = *t;
    int rc = strtab_init(t, (old.mask + 1) * 2);
    if (rc) {
        *t = old;
        return rc;
    }
    for (uint32_t i = 0; i <= old.mask; i++)
        if (old.ents[i].idx)
            (void)strtab_put(t, old.ents[i].s, old.ents[i].len, old.ents[i].h, old.ents[i].idx);
    if (old.heap)
        free(old.ents);
    return 0;
}

static struct strtab key_tab, value_tab;
static _Atomic int dict_state; /* 0 none, 1 building, 2 ready, -1 failed */

static int dict_ready(void)
{
    int st = atomic_load_explicit(&dict_state, memory_order_acquire);
    if (st == 2)
        return 0;
    int expect = 0;
    if (atomic_compare_exchange_strong(&dict_state, &expect, 1)) {
        int rc = strtab_init(&key_tab, 1024);
        if (!rc)
            rc = strtab_init(&value_tab, 512);
        for (size_t i = 0; !rc && i < NKEYS; i++) {
            size_t n = strlen(dict_keys[i]);
            rc = strtab_put(&key_tab, dict_keys[i], n, cache__hash(dict_keys[i], n, 0), (uint32_t)i + 1);
        }
        for (size_t i = 0; !rc && i < NVALUES; i++) {
            size_t n = strlen(dict_values[i]);
            rc = strtab_put(&value_tab, dict_values[i], n, cache__hash(dict_values[i], n, 0),
                            (uint32_t)i + 1);
        }
        atomic_store_explicit(&dict_state, rc ? -1 : 2, memory_order_release);
        return rc;
    }
    /* another thread is building: it finishes in microseconds */
    while ((st = atomic_load_explicit(&dict_state, memory_order_acquire)) == 1)
        ;
    return st == 2 ? 0 : -ENOMEM;
}

/* ---- encoder ---------------------------------------------------------------- */

#define ENC_REFS_INLINE 256 /* power of two */

struct enc {
    msgpack_packer pk;
    struct buf *out;
    int err;
    struct strtab refs;   /* literal strings of >= CODEC_REF_MIN bytes written so far */
    uint32_t nrefs;
};

static int enc_write(void *data, const char *p, size_t n)
{
    struct enc *e = data;
    struct buf *b = e->out;
    if (b->len + n < b->cap) { /* the packer writes token by token: skip the call */
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0; /* keep buf's NUL-termination promise */
        return 0;
    }
    if (buf_append(b, p, n)) {
        e->err = -ENOMEM;
        return -1;
    }
    return 0;
}

static void enc_ref_ext(struct enc *e, uint32_t idx)
{
    char b[2] = { (char)(idx >> 8), (char)(idx & 0xff) };
    msgpack_pack_ext(&e->pk, 2, EXT_STRING_REF);
    msgpack_pack_ext_body(&e->pk, b, 2);
}

/* A string in key or value position (dictionaries differ). */
static void enc_string(struct enc *e, const char *s, bool is_key)
{
    size_t n = strlen(s);
    uint64_t h = cache__hash(s, n, 0);
    uint32_t idx;
    if (is_key && (idx = strtab_find(&key_tab, s, n, h))) {
        msgpack_pack_uint32(&e->pk, idx - 1);
        return;
    }
    if (!is_key && (idx = strtab_find(&value_tab, s, n, h))) {
        char b = (char)(idx - 1);
        msgpack_pack_ext(&e->pk, 1, EXT_VALUE_DICT);
        msgpack_pack_ext_body(&e->pk, &b, 1);
        return;
    }
    if (n >= CODEC_REF_MIN) {
        if ((idx = strtab_find(&e->refs, s, n, h))) {
            enc_ref_ext(e, idx - 1);
            return;
        }
        if (e->nrefs < CODEC_MAX_REFS) {
            if (strtab_put(&e->refs, s, n, h, e->nrefs + 1)) {
                e->err = -ENOMEM;
                return;
            }
            e->nrefs++;
        }
    }
    msgpack_pack_str(&e->pk, n);
    msgpack_pack_str_body(&e->pk, s, n);
}

/*
 * Trimming while encoding (the writer must not modify the caller's tree, and a
 * copy of a Pod costs more than the encode): mask has bit i set while the path
 * from the root still matches the first depth elements of trim rule i.
 */
static uint32_t trim_child_mask(uint32_t mask, int depth, const char *key, bool *drop)
{
    uint32_t child = 0;
    *drop = false;
    for (size_t i = 0; mask && i < sizeof(trim_table) / sizeof(trim_table[0]); i++) {
        if (!(mask & (1u << i)) || depth >= 3 || !trim_table[i].path[depth] ||
            strcmp(trim_table[i].path[depth], key) != 0)
            continue;
        if (!trim_table[i].path[depth + 1])
            *drop = true;
        else
            child |= 1u << i;
    }
    return child;
}

static void enc_value(struct enc *e, const cJSON *v, int depth, uint32_t mask)
{
    if (e->err)
        return;
    if (depth > CODEC_MAX_DEPTH) {
        e->err = -EINVAL;
        return;
    }
    if (cJSON_IsObject(v)) {
        size_t n = 0;
        bool drop;
        for (const cJSON *c = v->child; c; c = c->next) {
            (void)trim_child_mask(mask, depth, c->string ? c->string : "", &drop);
            n += !drop;
        }
        msgpack_pack_map(&e->pk, n);
        for (const cJSON *c = v->child; c && !e->err; c = c->next) {
            const char *k = c->string ? c->string : "";
            uint32_t cm = trim_child_mask(mask, depth, k, &drop);
            if (drop)
                continue;
            enc_string(e, k, true);
            enc_value(e, c, depth + 1, cm);
        }
    } else if (cJSON_IsArray(v)) {
        size_t n = 0;
        for (const cJSON *c = v->child; c; c = c->next)
            n++;
        msgpack_pack_array(&e->pk, n);
        for (const cJSON *c = v->child; c && !e->err; c = c->next)
            enc_value(e, c, depth + 1, 0);
    } else if (cJSON_IsString(v)) {
        enc_string(e, v->valuestring ? v->valuestring : "", false);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (isfinite(d) && d == floor(d) && d >= -9.2e18 && d <= 9.2e18)
            msgpack_pack_int64(&e->pk, (int64_t)d);
        else
            msgpack_pack_double(&e->pk, d);
    } else if (cJSON_IsTrue(v)) {
        msgpack_pack_true(&e->pk);
    } else if (cJSON_IsFalse(v)) {
        msgpack_pack_false(&e->pk);
    } else if (cJSON_IsNull(v)) {
        msgpack_pack_nil(&e->pk);
    } else {
        e->err = -EINVAL; /* cJSON_Raw or invalid: not an API object */
    }
}

int cache_encode(const cJSON *obj, struct buf *out)
{
    return cache__encode_opts(obj, out, false);
}

int cache__encode_opts(const cJSON *obj, struct buf *out, bool trim)
{
    /* The first ENC_REFS_INLINE back-reference candidates are tracked on the
     * stack: a 6 KiB calloc per encode made glibc consolidate the watcher's
     * fastbins (freed cJSON nodes) on every event (issue 18). */
    struct strtab_ent inline_refs[ENC_REFS_INLINE] = { 0 };
    struct enc e = { .out = out };
    e.refs = (struct strtab){ .ents = inline_refs, .mask = ENC_REFS_INLINE - 1 };
    int rc = dict_ready();
    if (rc)
        return rc;
    size_t start = out->len;
    msgpack_packer_init(&e.pk, &e, enc_write);
    enc_value(&e, obj, 0, trim ? (1u << (sizeof(trim_table) / sizeof(trim_table[0]))) - 1 : 0);
    rc = e.err;
    if (e.refs.heap)
        free(e.refs.ents);
    if (rc)
        out->len = start;
    return rc;
}

/* ---- decoder ---------------------------------------------------------------- */

struct dec {
    const uint8_t *p;
    const uint8_t *end;
    struct { const uint8_t *s; uint32_t n; } *refs;
    uint32_t nrefs;
    size_t cap;
};

static int dec_need(struct dec *d, size_t n)
{
    return (size_t)(d->end - d->p) >= n ? 0 : -EIO;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static int dec_add_ref(struct dec *d, const uint8_t *s, uint32_t n)
{
    if (n < CODEC_REF_MIN || d->nrefs >= CODEC_MAX_REFS)
        return 0;
    if (util_array_grow(&d->refs, sizeof(*d->refs), d->nrefs, &d->cap, 64) < 0)
        return -ENOMEM;
    d->refs[d->nrefs].s = s;
    d->refs[d->nrefs].n = n;
    d->nrefs++;
    return 0;
}

/* The string at the cursor (literal, dictionary entry or reference): *out and
 * *outlen point into the input or the dictionaries, not NUL-terminated; for a
 * key dictionary entry *dict is also its NUL-terminated static string (else NULL). */
static int dec_str(struct dec *d, const uint8_t **out, uint64_t *outlen, bool is_key,
                   const char **dict)
{
    int rc = dec_need(d, 1);
    if (rc)
        return rc;
    uint8_t t = *d->p++;
    const uint8_t *s = NULL;
    uint64_t n = 0;
    *dict = NULL;
    if ((t & 0xe0) == 0xa0 || t == 0xd9 || t == 0xda || t == 0xdb) {
        int w = t == 0xd9 ? 1 : t == 0xda ? 2 : t == 0xdb ? 4 : 0;
        if ((rc = dec_need(d, (size_t)w)))
            return rc;
        n = w ? be(d->p, w) : (uint64_t)(t & 0x1f);
        d->p += w;
        if ((rc = dec_need(d, n)))
            return rc;
        s = d->p;
        d->p += n;
        if ((rc = dec_add_ref(d, s, (uint32_t)n)))
            return rc;
    } else if (is_key && (t < 0x80 || t == 0xcc || t == 0xcd)) {
        int w = t == 0xcc ? 1 : t == 0xcd ? 2 : 0;
        if ((rc = dec_need(d, (size_t)w)))
            return rc;
        uint64_t idx = w ? be(d->p, w) : t;
        d->p += w;
        if (idx >= NKEYS)
            return -EIO;
        *dict = dict_keys[idx];
        s = (const uint8_t *)dict_keys[idx];
        n = strlen(dict_keys[idx]);
    } else if (!is_key && t == 0xd4) { /* fixext1 */
        if ((rc = dec_need(d, 2)))
            return rc;
        if (d->p[0] != EXT_VALUE_DICT || d->p[1] >= NVALUES)
            return -EIO;
        s = (const uint8_t *)dict_values[d->p[1]];
        n = strlen(dict_values[d->p[1]]);
        d->p += 2;
    } else if (t == 0xd5) { /* fixext2 */
        if ((rc = dec_need(d, 3)))
            return rc;
        uint64_t idx = be(d->p + 1, 2);
        if (d->p[0] != EXT_STRING_REF || idx >= d->nrefs)
            return -EIO;
        s = d->refs[idx].s;
        n = d->refs[idx].n;
        d->p += 3;
    } else {
        return -EIO;
    }
    *out = s;
    *outlen = n;
    return 0;
}

/* A NUL-terminated copy: in small (>= 256 bytes) when it fits, else malloc'd
 * into *heap (caller frees). NULL on ENOMEM. */
static char *cstr(const uint8_t *s, uint64_t n, char *small, char **heap)
{
    char *c = small;
    *heap = NULL;
    if (n >= 256 && !(c = *heap = malloc(n + 1)))
        return NULL;
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

static int dec_value(struct dec *d, int depth, cJSON **out);

static int dec_container(struct dec *d, int depth, uint64_t n, bool map, cJSON **out)
{
    /* every element takes at least one byte (two for a map entry) */
    if (n > (uint64_t)(d->end - d->p) / (map ? 2 : 1))
        return -EIO;
    cJSON *c = map ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!c)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t i = 0; i < n && !rc; i++) {
        const uint8_t *ks = NULL;
        const char *dict = NULL;
        uint64_t kn = 0;
        cJSON *v = NULL;
        if (map && (rc = dec_str(d, &ks, &kn, true, &dict)))
            break;
        if (!(rc = dec_value(d, depth + 1, &v))) {
            if (map && dict) {
                /* a dictionary key is static: the node points at it instead of a
                 * copy (cJSON_StringIsConst), one malloc and free less per key */
                cJSON_AddItemToObjectCS(c, dict, v);
            } else if (map) {
                char small[256], *heap, *key = cstr(ks, kn, small, &heap);
                if (!key || !cJSON_AddItemToObject(c, key, v)) {
                    cJSON_Delete(v);
                    rc = -ENOMEM;
                }
                free(heap);
            } else {
                cJSON_AddItemToArray(c, v);
            }
        }
    }
    if (rc) {
        cJSON_Delete(c);
        return rc;
    }
    *out = c;
    return 0;
}

static int dec_value(struct dec *d, int depth, cJSON **out)
{
    int rc;
    if (depth > CODEC_MAX_DEPTH)
        return -EIO;
    if ((rc = dec_need(d, 1)))
        return rc;
    uint8_t t = *d->p;
    double num;
    if (t < 0x80 || t >= 0xe0) {
        d->p++;
        num = t < 0x80 ? t : (int8_t)t;
    } else if ((t & 0xf0) == 0x80 || (t & 0xf0) == 0x90 || t == 0xdc || t == 0xdd ||
               t == 0xde || t == 0xdf) {
        bool map = (t & 0xf0) == 0x80 || t == 0xde || t == 0xdf;
        int w = (t == 0xdc || t == 0xde) ? 2 : (t == 0xdd || t == 0xdf) ? 4 : 0;
        d->p++;
        if ((rc = dec_need(d, (size_t)w)))
            return rc;
        uint64_t n = w ? be(d->p, w) : (uint64_t)(t & 0x0f);
        d->p += w;
        return dec_container(d, depth, n, map, out);
    } else if (t == 0xc0 || t == 0xc2 || t == 0xc3) {
        d->p++;
        *out = t == 0xc0 ? cJSON_CreateNull() : cJSON_CreateBool(t == 0xc3);
        return *out ? 0 : -ENOMEM;
    } else if (t >= 0xcc && t <= 0xd3) { /* uint8..64, int8..64 */
        static const int widths[] = { 1, 2, 4, 8, 1, 2, 4, 8 };
        int w = widths[t - 0xcc];
        d->p++;
        if ((rc = dec_need(d, (size_t)w)))
            return rc;
        uint64_t v = be(d->p, w);
        d->p += w;
        if (t <= 0xcf) {
            num = (double)v;
        } else {
            int shift = 64 - 8 * w; /* sign-extend */
            num = (double)((int64_t)(v << shift) >> shift);
        }
    } else if (t == 0xca || t == 0xcb) {
        d->p++;
        int w = t == 0xca ? 4 : 8;
        if ((rc = dec_need(d, (size_t)w)))
            return rc;
        uint64_t v = be(d->p, w);
        d->p += w;
        if (w == 4) {
            uint32_t u = (uint32_t)v;
            float f;
            memcpy(&f, &u, 4);
            num = f;
        } else {
            memcpy(&num, &v, 8);
        }
        if (!isfinite(num))
            return -EIO; /* JSON has no NaN/Inf */
    } else {
        const uint8_t *s = NULL;
        const char *dict;
        uint64_t n = 0;
        if ((rc = dec_str(d, &s, &n, false, &dict)))
            return rc;
        char small[256], *heap, *str = cstr(s, n, small, &heap);
        *out = str ? cJSON_CreateString(str) : NULL;
        free(heap);
        return *out ? 0 : -ENOMEM;
    }
    *out = cJSON_CreateNumber(num);
    return *out ? 0 : -ENOMEM;
}

int cache_decode(const void *data, size_t len, cJSON **out)
{
    struct dec d = { .p = data, .end = (const uint8_t *)data + len };
    cJSON *v = NULL;
    *out = NULL;
    if (!data)
        return -EINVAL;
    int rc = dec_value(&d, 0, &v);
    free(d.refs);
    if (rc)
        return rc;
    if (d.p != d.end) { /* trailing bytes: not something cache_encode wrote */
        cJSON_Delete(v);
        return -EIO;
    }
    *out = v;
    return 0;
}
