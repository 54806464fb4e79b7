/*
 * leader.c - leader election for `rayop controller KIND --enable-leader-election`,
 * the way client-go's tools/leaderelection does it with a coordination.k8s.io/v1
 * Lease, but with one Lease per controller kind ("rayop-KIND-leader") and the
 * Pod as the holder identity: every controller process of one kind in one Pod
 * shares leadership (they pull from one watcher queue, which is safe), while a
 * second operator Pod's processes of that kind wait.
 *
 * A background thread tries to acquire (create, or update with the Lease's
 * resourceVersion: optimistic concurrency) every retry period. Expiry is judged
 * as client-go does, on this process's clock: a Lease whose record has not
 * changed for leaseDurationSeconds since we first saw it is free, so clock
 * skew between Pods does not matter. Once leader it renews every retry period;
 * when no renew has succeeded for the renew deadline, or someone else holds
 * the Lease, leadership is lost and the host is told to exit (non-zero), as
 * controller-runtime does. host_leader_release() gives the Lease up on a clean
 * shutdown (holder cleared, leaseDurationSeconds 1: ReleaseOnCancel).
 *
 * Migration guard: KubeRay's operator leads through the Lease "ray-operator-leader"
 * in the same namespace. While someone holds it (judged as above: a holder whose
 * record keeps changing within its leaseDurationSeconds), this process does not try
 * to lead, and says so once in the log; a leader that sees it taken steps down like
 * one that lost its own Lease. So a KubeRay operator left running during a migration
 * and rayop never reconcile the same objects at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reconcilers/host/internal.h"
#include "util/util.h"

#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

struct host_leader {
    struct host_leader_config cfg;
    struct host_kube_slot *slot;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;                  /* under mu */
    atomic_int state;           /* enum host_leader_state */
    /* what we last saw of the Lease (client-go's observedRecord/observedTime) */
    char observed[HOST_LEASE_OBSERVED_MAX];
    uint64_t observed_ms;
    uint64_t last_renew_ms;     /* last successful acquire/renew */
    char waiting_for[HOST_LEASE_HOLDER_MAX]; /* holder last logged while waiting */
    uint64_t free_since_ms;     /* a free Lease first seen while our Pod leads another kind */
    uint64_t spread_check_ms;   /* last look at the other kinds' Leases and the peers */
    char guard_observed[HOST_LEASE_OBSERVED_MAX]; /* the guard Lease, as observed above */
    uint64_t guard_observed_ms;
    char guard_logged[HOST_LEASE_HOLDER_MAX];     /* guard holder last logged */
    host_leader_lost_fn on_lost;
    void *on_lost_arg;
};

/* ---- the pure decision ----------------------------------------------------- */

enum host_lease_action host__lease_decide(const struct host_lease_record *rec, bool exists,
                                          const char *identity, uint64_t observed_ms,
                                          uint64_t now_ms)
{
    if (!exists)
        return HOST_LEASE_CREATE;
    if (strcmp(rec->holder, identity) == 0)
        return HOST_LEASE_RENEW;
    if (rec->holder[0] == '\0')
        return HOST_LEASE_TAKEOVER;          /* released */
    /* as client-go: a Lease without leaseDurationSeconds counts as expired */
    if (observed_ms + (uint64_t)rec->duration_s * 1000 <= now_ms)
        return HOST_LEASE_TAKEOVER;          /* the holder stopped renewing */
    return HOST_LEASE_WAIT;
}

int host__lease_record_from_json(const cJSON *lease, struct host_lease_record *rec)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec"), *v;
    memset(rec, 0, sizeof(*rec));
    if (!cJSON_IsObject(lease))
        return -EINVAL;
    if (!spec)
        return 0;
    if (!cJSON_IsObject(spec))
        return -EINVAL;
    v = cJSON_GetObjectItemCaseSensitive(spec, "holderIdentity");
    if (cJSON_IsString(v) && snprintf(rec->holder, sizeof(rec->holder), "%s", v->valuestring) >=
                             (int)sizeof(rec->holder))
        return -EINVAL;
    v = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
    if (cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1e6)
        rec->duration_s = (int)v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 2e9)
        rec->transitions = (int)v->valuedouble;
    v = cJSON_GetObjectItemCaseSensitive(spec, "renewTime");
    if (cJSON_IsString(v))
        snprintf(rec->renew_time, sizeof(rec->renew_time), "%s", v->valuestring);
    v = cJSON_GetObjectItemCaseSensitive(spec, "acquireTime");
    if (cJSON_IsString(v))
        snprintf(rec->acquire_time, sizeof(rec->acquire_time), "%s", v->valuestring);
    return 0;
}

bool host__lease_leads_other(const char *const *holders, size_t nkinds, size_t kind,
                             const char *me)
{
    for (size_t i = 0; i < nkinds; i++)
        if (i != kind && holders[i] && !strcmp(holders[i], me))
            return true;
    return false;
}

bool host__lease_should_yield(const char *const *holders, size_t nkinds, size_t kind,
                              const char *me, const char *const *peers, size_t npeers)
{
    size_t mine = 0, fewest = SIZE_MAX;

    if (kind >= nkinds || !holders[kind] || strcmp(holders[kind], me))
        return false;
    for (size_t i = 0; i < nkinds; i++)
        if (holders[i] && !strcmp(holders[i], me)) {
            mine++;
            if (i > kind)
                return false;            /* a later kind of ours moves first */
        }
    for (size_t p = 0; p < npeers; p++) {
        size_t n = 0;
        if (!strcmp(peers[p], me))
            continue;
        for (size_t i = 0; i < nkinds; i++)
            n += holders[i] && !strcmp(holders[i], peers[p]);
        if (n < fewest)
            fewest = n;
    }
    return fewest != SIZE_MAX && mine >= fewest + 2;
}

/* ---- identity and namespace ------------------------------------------------ */

int host__leader_identity(char *out, size_t cap)
{
    const char *pod = getenv("POD_NAME");
    if (pod && *pod)
        return snprintf(out, cap, "%s", pod) < (int)cap ? 0 : -ENAMETOOLONG;
    if (gethostname(out, cap) < 0)
        return -errno;
    out[cap - 1] = '\0';
    return out[0] ? 0 : -ENOENT;
}

void host__leader_namespace(const char *flag, char *out, size_t cap)
{
    char buf[256];
    size_t n = 0;
    FILE *f;
    if (flag && *flag) {
        snprintf(out, cap, "%s", flag);
        return;
    }
    snprintf(out, cap, "default");
    if (!(f = fopen(SA_NAMESPACE_FILE, "r")))
        return;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    if (n > 0)
        snprintf(out, cap, "%s", buf);
}

/* ---- the API side ---------------------------------------------------------- */

static void set_state(struct host_leader *le, enum host_leader_state s)
{
    pthread_mutex_lock(&le->mu);
    atomic_store(&le->state, (int)s);
    pthread_cond_broadcast(&le->cond);
    pthread_mutex_unlock(&le->mu);
}

/* Fills spec for holder (NULL: release) on obj, keeping acquireTime and the
 * transition count when we already hold it. */
static int fill_spec(cJSON *obj, const struct host_leader *le, const struct host_lease_record *old,
                     enum host_lease_action a, bool release)
{
    char now[40];
    struct timespec ts;
    cJSON *spec;
    clock_gettime(CLOCK_REALTIME, &ts);
    util_format_microtime(&ts, now);
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "spec");
    if (!(spec = cJSON_AddObjectToObject(obj, "spec")))
        return -ENOMEM;
    int transitions = old ? old->transitions : 0;
    if (a == HOST_LEASE_TAKEOVER)
        transitions++;
    const char *acquire = (a == HOST_LEASE_RENEW && old->acquire_time[0]) ? old->acquire_time : now;
    if (!cJSON_AddStringToObject(spec, "holderIdentity", release ? "" : le->cfg.identity) ||
        !cJSON_AddNumberToObject(spec, "leaseDurationSeconds", release ? 1 : le->cfg.lease_s) ||
        !cJSON_AddStringToObject(spec, "acquireTime", acquire) ||
        !cJSON_AddStringToObject(spec, "renewTime", now) ||
        !cJSON_AddNumberToObject(spec, "leaseTransitions", transitions))
        return -ENOMEM;
    return 0;
}

static cJSON *new_lease(const struct host_leader *le)
{
    cJSON *o = cJSON_CreateObject(), *md;
    if (!o || !cJSON_AddStringToObject(o, "apiVersion", "coordination.k8s.io/v1") ||
        !cJSON_AddStringToObject(o, "kind", "Lease") || !(md = cJSON_AddObjectToObject(o, "metadata")) ||
        !cJSON_AddStringToObject(md, "name", le->cfg.name) ||
        !cJSON_AddStringToObject(md, "namespace", le->cfg.ns)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ---- spreading (the API side) ---------------------------------------------- */

/* The holders of every kind's Lease (free or missing: ""); *self the index of ours. */
static int kind_holders(struct host_leader *le, struct kube_client *kc,
                        char (*holders)[HOST_LEASE_HOLDER_MAX], size_t *self)
{
    *self = SIZE_MAX;
    for (size_t i = 0; i < le->cfg.nkinds; i++) {
        struct kube_result res = { 0 };
        struct host_lease_record rec;
        char name[254];
        int rc;
        snprintf(name, sizeof(name), "rayop-%s-leader", le->cfg.kinds[i]);
        if (!strcmp(name, le->cfg.name))
            *self = i;
        holders[i][0] = '\0';
        rc = kube_get(kc, &KUBE_RES_LEASES, le->cfg.ns, name, &res);
        if (rc == 0 && host__lease_record_from_json(res.body, &rec) == 0)
            snprintf(holders[i], HOST_LEASE_HOLDER_MAX, "%s", rec.holder);
        kube_result_release(&res);
        if (rc < 0 && rc != -ENOENT)
            return rc;
    }
    return *self == SIZE_MAX ? -ENOENT : 0;
}

/* Does our Pod lead another kind? (false when that cannot be read) */
static bool pod_leads_other(struct host_leader *le, struct kube_client *kc)
{
    char holders[HOST_MAX_KINDS][HOST_LEASE_HOLDER_MAX];
    const char *hp[HOST_MAX_KINDS];
    size_t self;

    if (kind_holders(le, kc, holders, &self) < 0)
        return false;
    for (size_t i = 0; i < le->cfg.nkinds; i++)
        hp[i] = holders[i];
    return host__lease_leads_other(hp, le->cfg.nkinds, self, le->cfg.identity);
}

/* The live Pods sharing our Pod's app.kubernetes.io/name and /instance labels (the
 * Deployment's), ours included: names into *peers, borrowed from list (the caller
 * releases it). 0 peers without POD_NAME, without those labels, or on an API error. */
static size_t list_peers(struct host_leader *le, struct kube_client *kc, struct kube_result *list,
                         const char **peers, size_t cap)
{
    char sel[600], pns[64];
    const char *env_ns = getenv("POD_NAMESPACE"), *name, *inst;
    struct kube_result pod = { 0 };
    struct kube_list_opts lo = { 0 };
    const cJSON *lb, *it;
    size_t npeers = 0;

    snprintf(pns, sizeof(pns), "%s", env_ns && *env_ns ? env_ns : le->cfg.ns);
    if (!getenv("POD_NAME") ||
        kube_get(kc, &KUBE_RES_PODS, pns, le->cfg.identity, &pod) < 0)
        goto out;
    lb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod.body, "metadata"), "labels");
    name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(lb, "app.kubernetes.io/name"));
    inst = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(lb, "app.kubernetes.io/instance"));
    if (!name || !inst)
        goto out;
    snprintf(sel, sizeof(sel), "app.kubernetes.io/name=%s,app.kubernetes.io/instance=%s", name, inst);
    lo.label_selector = sel;
    if (kube_list(kc, &KUBE_RES_PODS, pns, &lo, list) < 0)
        goto out;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list->body, "items")) {
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(it, "status"), "phase"));
        const char *pn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "name"));
        if (pn && ph && !strcmp(ph, "Running") && npeers < cap &&
            !cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp"))
            peers[npeers++] = pn;
    }
out:
    kube_result_release(&pod);
    return npeers;
}

/* Should we give our Lease to a peer Pod that leads fewer kinds? Without peers (see
 * list_peers), or on any API error, we keep leading. */
static bool should_yield(struct host_leader *le, struct kube_client *kc)
{
    char holders[HOST_MAX_KINDS][HOST_LEASE_HOLDER_MAX];
    const char *hp[HOST_MAX_KINDS], *peers[64];
    struct kube_result list = { 0 };
    size_t self, npeers = list_peers(le, kc, &list, peers, 64);
    bool yield = false;

    if (npeers < 2 || kind_holders(le, kc, holders, &self) < 0)
        goto out;
    for (size_t i = 0; i < le->cfg.nkinds; i++)
        hp[i] = holders[i];
    yield = host__lease_should_yield(hp, le->cfg.nkinds, self, le->cfg.identity, peers, npeers);
out:
    kube_result_release(&list);
    return yield;
}

/* A head start for another Pod only makes sense if there is one: a single Pod (rayop up
 * on a machine, one replica) takes a free Lease at once. Without that, every start of
 * the whole instance left two of the four kinds unreconciled for two retry periods (4 s;
 * seen after each kill -9 of rayop up in the chaos soak). */
static bool has_peer(struct host_leader *le, struct kube_client *kc)
{
    const char *peers[2];
    struct kube_result list = { 0 };
    bool any = list_peers(le, kc, &list, peers, 2) >= 2;
    kube_result_release(&list);
    return any;
}

/* When the record (holder, renew time, transitions, rv) differs from what was seen
 * last, it has changed since we last looked: restart its expiry clock. */
static void observe(const struct host_lease_record *rec, const char *rv,
                    char seen[HOST_LEASE_OBSERVED_MAX], uint64_t *seen_ms, uint64_t now)
{
    char observed[HOST_LEASE_OBSERVED_MAX];
    snprintf(observed, sizeof(observed), "%s|%s|%d|%s", rec->holder, rec->renew_time,
             rec->transitions, rv);
    if (strcmp(observed, seen) != 0) {
        memcpy(seen, observed, sizeof(observed));
        *seen_ms = now;
    }
}

/* One tryAcquireOrRenew. 1 we hold the Lease, 0 someone else does, < 0 the
 * API call failed (conflicts included: the next round sees the new record). */
static int try_acquire_or_renew(struct host_leader *le, struct kube_client *kc, bool release)
{
    struct kube_result res = { 0 };
    struct host_lease_record rec;
    uint64_t now = util_now_ms();
    bool exists;
    cJSON *obj = NULL;
    int rc = kube_get(kc, &KUBE_RES_LEASES, le->cfg.ns, le->cfg.name, &res);
    if (rc < 0 && rc != -ENOENT)
        goto out;
    exists = rc == 0;
    if (exists) {
        obj = res.body;
        res.body = NULL;
        if ((rc = host__lease_record_from_json(obj, &rec)) < 0)
            goto out;
        observe(&rec, res.resource_version, le->observed, &le->observed_ms, now);
    } else {
        memset(&rec, 0, sizeof(rec));
        if (!(obj = new_lease(le))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    enum host_lease_action a = host__lease_decide(&rec, exists, le->cfg.identity,
                                                  le->observed_ms, now);
    if (release) {
        rc = 0;
        if (a != HOST_LEASE_RENEW)
            goto out;                        /* not ours (any more): nothing to give up */
    } else if (a == HOST_LEASE_WAIT) {
        le->free_since_ms = 0;
        rc = 0;
        goto out;
    } else if (a != HOST_LEASE_RENEW && atomic_load(&le->state) == HOST_LEADER_WAITING &&
               pod_leads_other(le, kc) && has_peer(le, kc)) {
        /* free, but our Pod leads another kind: give a Pod that leads none the first
         * chance, for two retry periods */
        if (!le->free_since_ms)
            le->free_since_ms = now;
        if (now - le->free_since_ms < 2 * (uint64_t)le->cfg.retry_ms) {
            rc = 0;
            goto out;
        }
    }
    if ((rc = fill_spec(obj, le, exists ? &rec : NULL, a, release)) < 0)
        goto out;
    kube_result_release(&res);
    memset(&res, 0, sizeof(res));
    rc = a == HOST_LEASE_CREATE ? kube_create(kc, &KUBE_RES_LEASES, le->cfg.ns, obj, &res)
                                : kube_update(kc, &KUBE_RES_LEASES, le->cfg.ns, obj, &res);
    if (rc == 0) {
        rc = release ? 0 : 1;
        /* also a second process of the holder Pod: it leads from its first renew */
        if (!release && (a != HOST_LEASE_RENEW || atomic_load(&le->state) == HOST_LEADER_WAITING)) {
            char t[16];
            snprintf(t, sizeof(t), "%d", a == HOST_LEASE_TAKEOVER ? rec.transitions + 1 : 0);
            log_info("successfully acquired lease", "lease", le->cfg.name, "namespace", le->cfg.ns,
                     "identity", le->cfg.identity, "previousHolder", rec.holder,
                     "leaseTransitions", t, NULL);
        }
    }
out:
    if (rc == 0 && !release && atomic_load(&le->state) == HOST_LEADER_WAITING &&
        strcmp(le->waiting_for, rec.holder) != 0) { /* a new holder: say who we wait for */
        snprintf(le->waiting_for, sizeof(le->waiting_for), "%s", rec.holder);
        log_info("waiting for leadership", "lease", le->cfg.name, "namespace", le->cfg.ns,
                 "holder", rec.holder, "identity", le->cfg.identity, NULL);
    }
    cJSON_Delete(obj);
    kube_result_release(&res);
    return rc;
}

/* The guard Lease: 1 held by another operator (holder in holder), 0 free or absent,
 * < 0 could not read it. */
static int guard_held(struct host_leader *le, struct kube_client *kc, char *holder, size_t cap)
{
    struct kube_result res = { 0 };
    struct host_lease_record rec;
    uint64_t now = util_now_ms();
    holder[0] = '\0';
    if (!le->cfg.guard[0])
        return 0;
    int rc = kube_get(kc, &KUBE_RES_LEASES, le->cfg.ns, le->cfg.guard, &res);
    if (rc == -ENOENT) {
        rc = 0;
        goto out;
    }
    if (rc < 0 || (rc = host__lease_record_from_json(res.body, &rec)) < 0)
        goto out;
    observe(&rec, res.resource_version, le->guard_observed, &le->guard_observed_ms, now);
    /* held when it would make us wait for it, were it ours */
    rc = host__lease_decide(&rec, true, le->cfg.identity, le->guard_observed_ms, now) ==
         HOST_LEASE_WAIT;
    if (rc)
        snprintf(holder, cap, "%s", rec.holder);
out:
    kube_result_release(&res);
    return rc;
}

/* Sleeps up to ms unless stopped. true when stopped. */
static bool wait_stop(struct host_leader *le, int ms)
{
    struct timespec until;
    bool stop;
    util_deadline_ms(&until, ms);
    pthread_mutex_lock(&le->mu);
    while (!le->stop && pthread_cond_timedwait(&le->cond, &le->mu, &until) == 0)
        ;
    stop = le->stop;
    pthread_mutex_unlock(&le->mu);
    return stop;
}

/* The API client through the host's slot (waits for its background creation). */
static struct kube_client *slot_client(struct host_kube_slot *slot)
{
    struct host_ctx c = { .kube_slot = slot };
    return host_kube(&c);
}

static void *leader_thread(void *arg)
{
    struct host_leader *le = arg;
    struct kube_client *kc = slot_client(le->slot);
    char last_err[64] = "";
    if (!kc)
        return NULL;                         /* the host exits on its own */
    while (!wait_stop(le, 0)) {
        char gh[HOST_LEASE_HOLDER_MAX];
        int g = guard_held(le, kc, gh, sizeof(gh)), rc;
        int st = atomic_load(&le->state);
        if (g == 1 && st == HOST_LEADER_LEADING) {
            log_error("leader election lost: another operator holds its leader Lease",
                      "lease", le->cfg.guard, "namespace", le->cfg.ns, "holder", gh, NULL);
            set_state(le, HOST_LEADER_LOST);
            if (le->on_lost)
                le->on_lost(le->on_lost_arg);
            return NULL;
        }
        if (g == 1) {
            if (strcmp(le->guard_logged, gh) != 0) {
                snprintf(le->guard_logged, sizeof(le->guard_logged), "%s", gh);
                log_warn("a KubeRay operator holds its leader Lease: waiting for it to stop "
                         "before reconciling (migration guard)", "lease", le->cfg.guard,
                         "namespace", le->cfg.ns, "holder", gh, NULL);
            }
            if (wait_stop(le, le->cfg.retry_ms))
                break;
            continue;
        }
        if (g == 0 && le->guard_logged[0]) {
            log_info("the KubeRay operator's leader Lease is free: trying to lead",
                     "lease", le->cfg.guard, "namespace", le->cfg.ns, NULL);
            le->guard_logged[0] = '\0';
        }
        rc = try_acquire_or_renew(le, kc, false);
        uint64_t now = util_now_ms();
        if (rc == 1) {
            le->last_renew_ms = now;
            le->free_since_ms = 0;
            last_err[0] = '\0';
            if (st == HOST_LEADER_WAITING) {
                set_state(le, HOST_LEADER_LEADING);
                le->spread_check_ms = now;
            } else if (now - le->spread_check_ms >= (uint64_t)le->cfg.lease_s * 1000 / 2) {
                /* now and then: does a peer Pod lead two kinds fewer than ours? */
                le->spread_check_ms = now;
                if (should_yield(le, kc)) {
                    log_info("yielding leadership to spread the kinds over the replicas",
                             "lease", le->cfg.name, "namespace", le->cfg.ns,
                             "identity", le->cfg.identity, NULL);
                    if (try_acquire_or_renew(le, kc, true) < 0)
                        log_warn("failed to release the lease", "lease", le->cfg.name, NULL);
                    set_state(le, HOST_LEADER_LOST);
                    if (le->on_lost)
                        le->on_lost(le->on_lost_arg);
                    return NULL;
                }
            }
        } else if (st == HOST_LEADER_LEADING &&
                   (rc == 0 || now - le->last_renew_ms >= (uint64_t)le->cfg.renew_deadline_ms)) {
            log_error("leader election lost", "lease", le->cfg.name, "namespace", le->cfg.ns,
                      "identity", le->cfg.identity,
                      "reason", rc == 0 ? "another holder" : "renew deadline exceeded", NULL);
            set_state(le, HOST_LEADER_LOST);
            if (le->on_lost)
                le->on_lost(le->on_lost_arg);
            return NULL;
        } else if (rc < 0 && strcmp(last_err, kube_strerror(rc)) != 0) {
            snprintf(last_err, sizeof(last_err), "%s", kube_strerror(rc));
            log_warn("error retrieving or updating the lease", "lease", le->cfg.name,
                     "error", last_err, NULL);
        }
        if (wait_stop(le, le->cfg.retry_ms))
            break;
    }
    return NULL;
}

int host__leader_start(const struct host_leader_config *cfg, struct host_kube_slot *slot,
                       host_leader_lost_fn on_lost, void *arg, struct host_leader **out)
{
    struct host_leader *le = calloc(1, sizeof(*le));
    int rc;
    if (!le)
        return -ENOMEM;
    le->cfg = *cfg;
    le->slot = slot;
    le->on_lost = on_lost;
    le->on_lost_arg = arg;
    atomic_store(&le->state, HOST_LEADER_WAITING);
    pthread_mutex_init(&le->mu, NULL);
    pthread_cond_init(&le->cond, NULL);
    log_info("attempting to acquire leader lease", "lease", cfg->name, "namespace", cfg->ns,
             "identity", cfg->identity, NULL);
    if ((rc = -pthread_create(&le->thread, NULL, leader_thread, le)) < 0) {
        host__leader_stop(le, false);
        return rc;
    }
    le->started = true;
    *out = le;
    return 0;
}

enum host_leader_state host__leader_get_state(struct host_leader *le)
{
    return le ? (enum host_leader_state)atomic_load(&le->state) : HOST_LEADER_LEADING;
}

enum host_leader_state host__leader_wait(struct host_leader *le, int timeout_ms)
{
    struct timespec until;
    int st;
    if (!le)
        return HOST_LEADER_LEADING;
    util_deadline_ms(&until, timeout_ms);
    pthread_mutex_lock(&le->mu);
    while ((st = atomic_load(&le->state)) == HOST_LEADER_WAITING && !le->stop &&
           pthread_cond_timedwait(&le->cond, &le->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&le->mu);
    return (enum host_leader_state)st;
}

void host__leader_stop(struct host_leader *le, bool release)
{
    if (!le)
        return;
    pthread_mutex_lock(&le->mu);
    le->stop = true;
    pthread_cond_broadcast(&le->cond);
    pthread_mutex_unlock(&le->mu);
    if (le->started)
        pthread_join(le->thread, NULL);
    if (release && atomic_load(&le->state) == HOST_LEADER_LEADING) {
        struct kube_client *kc = slot_client(le->slot);
        int rc = kc ? try_acquire_or_renew(le, kc, true) : -ENOTCONN;
        if (rc < 0)
            log_warn("failed to release the lease", "lease", le->cfg.name,
                     "error", kube_strerror(rc), NULL);
        else
            log_info("lease released", "lease", le->cfg.name, "namespace", le->cfg.ns, NULL);
    }
    pthread_cond_destroy(&le->cond);
    pthread_mutex_destroy(&le->mu);
    free(le);
}
