/*
 * limiter.c - the client-side token bucket (QPS + burst) shared by every
 * thread of a client, as client-go's flowcontrol limiter is shared by a
 * rest.Config's clients.
 *
 * Buckets are per resource and, within one, apart for reads and writes: what
 * --qps means to KubeRay, whose controller-runtime client makes one client-go
 * RESTClient (one bucket) per GroupVersionKind, and whose manager reads live
 * through the API reader, a client of its own (client.New: its own RESTClients
 * and buckets). rayop's live reads (the GET and LIST that confirm the cache
 * before a create) are the API reader's; its writes are the client's.
 *
 * A ticket (kube_ticket_take) is a write token taken ahead of the request it
 * pays for, so that a create checked by a read waits before that read.
 *
 * It works by reservation, like golang.org/x/time/rate's Reserve: a caller
 * always takes a token, the balance may go negative, and the caller sleeps
 * for however long the deficit takes to refill. Callers are thus served in
 * call order and nobody spins re-checking the bucket.
 */
#include <stdio.h>
#include <string.h>

#include "kube/internal.h"

void kube__limiter_init(struct kube_limiter *l, double qps, int burst, uint64_t now_ns)
{
    pthread_mutex_init(&l->mu, NULL);
    l->qps = qps;
    l->burst = burst > 0 ? burst : 1;
    l->tokens = l->burst;
    l->last_ns = now_ns;
}

void kube__limiter_destroy(struct kube_limiter *l)
{
    pthread_mutex_destroy(&l->mu);
}

uint64_t kube__limiter_reserve(struct kube_limiter *l, uint64_t now_ns)
{
    uint64_t wait = 0;

    if (l->qps <= 0)
        return 0;
    pthread_mutex_lock(&l->mu);
    /* A fake or racing clock may step back: never refill on negative time. */
    if (now_ns > l->last_ns) {
        l->tokens += (double)(now_ns - l->last_ns) * l->qps / 1e9;
        if (l->tokens > l->burst)
            l->tokens = l->burst;
        l->last_ns = now_ns;
    }
    l->tokens -= 1.0;
    if (l->tokens < 0)
        wait = (uint64_t)(-l->tokens / l->qps * 1e9);
    pthread_mutex_unlock(&l->mu);
    return wait;
}

void kube_ticket_take(struct kube_client *c, const struct kube_resource *r, struct kube_ticket *t)
{
    uint64_t wait = kube__limiter_reserve(kube__limiter_for(c, r, false), kube__now(c));

    if (wait > 0) {
        atomic_fetch_add(&c->st_throttled_ns, wait);
        c->opts.clock.sleep_ns(c->opts.clock.arg, wait);
    }
    t->res = r;
    t->waited_s = (double)wait / 1e9;
    t->taken = 1;
}

struct kube_limiter *kube__limiter_for(struct kube_client *c, const struct kube_resource *r,
                                       bool read)
{
    char key[sizeof(c->lims[0].key)];
    struct kube_limiter *l = &c->limiter;

    if (r == NULL || r->plural == NULL ||
        (size_t)snprintf(key, sizeof(key), "%s/%s%s", r->group ? r->group : "", r->plural,
                         read ? "+r" : "") >= sizeof(key))
        return l;
    pthread_mutex_lock(&c->lim_mu);
    for (size_t i = 0; i < c->nlims; i++) {
        if (strcmp(c->lims[i].key, key) == 0) {
            l = &c->lims[i].l;
            goto out;
        }
    }
    if (c->nlims < KUBE_LIMITERS_MAX) {
        struct kube_limiter_slot *s = &c->lims[c->nlims++];
        memcpy(s->key, key, sizeof(key));
        kube__limiter_init(&s->l, c->opts.qps, c->opts.burst, kube__now(c));
        l = &s->l;
    }
out:
    pthread_mutex_unlock(&c->lim_mu);
    return l;
}
