/*
 * test_host_leader.c - the leader election's pure parts (reconcilers/host/
 * leader.c): reading a Lease's spec, and client-go's acquire / renew / wait /
 * expired-takeover decision judged on this process's observation clock.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reconcilers/host/internal.h"

static void test_record_from_json(void **state)
{
    struct host_lease_record r;
    (void)state;
    cJSON *l = cJSON_Parse("{\"metadata\":{\"name\":\"rayop-test-leader\"},\"spec\":{"
                           "\"holderIdentity\":\"pod-a\",\"leaseDurationSeconds\":15,"
                           "\"acquireTime\":\"2026-12-02T17:00:00.000000Z\","
                           "\"renewTime\":\"2026-12-02T17:00:04.000000Z\",\"leaseTransitions\":3}}");
    assert_int_equal(host__lease_record_from_json(l, &r), 0);
    assert_string_equal(r.holder, "pod-a");
    assert_int_equal(r.duration_s, 15);
    assert_int_equal(r.transitions, 3);
    assert_string_equal(r.acquire_time, "2026-12-02T17:00:00.000000Z");
    assert_string_equal(r.renew_time, "2026-12-02T17:00:04.000000Z");
    cJSON_Delete(l);

    /* no spec: an empty record (free to take); wrong types are ignored */
    l = cJSON_Parse("{\"metadata\":{}}");
    assert_int_equal(host__lease_record_from_json(l, &r), 0);
    assert_string_equal(r.holder, "");
    cJSON_Delete(l);
    l = cJSON_Parse("{\"spec\":{\"holderIdentity\":7,\"leaseDurationSeconds\":\"x\","
                    "\"leaseTransitions\":-4}}");
    assert_int_equal(host__lease_record_from_json(l, &r), 0);
    assert_string_equal(r.holder, "");
    assert_int_equal(r.duration_s, 0);
    assert_int_equal(r.transitions, 0);
    cJSON_Delete(l);

    l = cJSON_Parse("{\"spec\":[]}");
    assert_int_equal(host__lease_record_from_json(l, &r), -EINVAL);
    cJSON_Delete(l);
    l = cJSON_Parse("[1]");
    assert_int_equal(host__lease_record_from_json(l, &r), -EINVAL);
    cJSON_Delete(l);
    /* a holder longer than any Pod name is refused, not truncated into a match */
    char big[400];
    memset(big, 'a', 300);
    strcpy(big + 300, "\"}}");
    char doc[512];
    snprintf(doc, sizeof(doc), "{\"spec\":{\"holderIdentity\":\"%s", big);
    l = cJSON_Parse(doc);
    assert_non_null(l);
    assert_int_equal(host__lease_record_from_json(l, &r), -EINVAL);
    cJSON_Delete(l);
}

static void test_decide(void **state)
{
    struct host_lease_record r = { .duration_s = 15 };
    (void)state;
    /* no Lease yet */
    assert_int_equal(host__lease_decide(&r, false, "a", 0, 1000), HOST_LEASE_CREATE);
    /* ours (this Pod's, whichever process renewed it): renew */
    strcpy(r.holder, "a");
    assert_int_equal(host__lease_decide(&r, true, "a", 1000, 999999), HOST_LEASE_RENEW);
    /* another holder seen 14.999 s ago: wait; 15 s: expired, take over */
    assert_int_equal(host__lease_decide(&r, true, "b", 1000, 15999), HOST_LEASE_WAIT);
    assert_int_equal(host__lease_decide(&r, true, "b", 1000, 16000), HOST_LEASE_TAKEOVER);
    /* the observation clock, not renewTime: a fresh observation waits again */
    assert_int_equal(host__lease_decide(&r, true, "b", 16000, 17000), HOST_LEASE_WAIT);
    /* released (holder cleared): take over at once */
    r.holder[0] = '\0';
    assert_int_equal(host__lease_decide(&r, true, "b", 16000, 16001), HOST_LEASE_TAKEOVER);
    /* a short lease expires sooner */
    strcpy(r.holder, "a");
    r.duration_s = 1;
    assert_int_equal(host__lease_decide(&r, true, "b", 5000, 5999), HOST_LEASE_WAIT);
    assert_int_equal(host__lease_decide(&r, true, "b", 5000, 6000), HOST_LEASE_TAKEOVER);
    /* no leaseDurationSeconds: client-go reads 0 s, i.e. already expired */
    r.duration_s = 0;
    assert_int_equal(host__lease_decide(&r, true, "b", 5000, 5000), HOST_LEASE_TAKEOVER);
}

/* Spreading kinds over two or three Pods: who waits before taking a free Lease, and who
 * yields a held one. */
static void test_spread(void **state)
{
    const char *all_a[] = { "a", "a", "a", "" };           /* raycluster rayjob rayservice cron */
    const char *two_one[] = { "a", "b", "a", "" };
    const char *peers_ab[] = { "a", "b" }, *peers_abc[] = { "a", "b", "c" }, *peers_a[] = { "a" };
    const char *a_b_c[] = { "a", "b", "c", "" };
    (void)state;
    /* a leads all three, b none: only a's last kind (rayservice, 2) yields */
    assert_false(host__lease_should_yield(all_a, 4, 0, "a", peers_ab, 2));
    assert_false(host__lease_should_yield(all_a, 4, 1, "a", peers_ab, 2));
    assert_true(host__lease_should_yield(all_a, 4, 2, "a", peers_ab, 2));
    assert_false(host__lease_should_yield(all_a, 4, 3, "a", peers_ab, 2));   /* not a's */
    assert_false(host__lease_should_yield(all_a, 4, 2, "b", peers_ab, 2));   /* not b's */
    /* 2 against 1 is as even as three kinds get over two Pods */
    assert_false(host__lease_should_yield(two_one, 4, 2, "a", peers_ab, 2));
    assert_false(host__lease_should_yield(two_one, 4, 1, "b", peers_ab, 2));
    /* alone, or without a peer list, nobody yields */
    assert_false(host__lease_should_yield(all_a, 4, 2, "a", peers_a, 1));
    assert_false(host__lease_should_yield(all_a, 4, 2, "a", NULL, 0));
    /* three Pods: a with 2 against c with 0 yields */
    assert_true(host__lease_should_yield(two_one, 4, 2, "a", peers_abc, 3));
    assert_false(host__lease_should_yield(a_b_c, 4, 0, "a", peers_abc, 3));
    /* waiting before a free Lease: only when our Pod leads another kind */
    assert_true(host__lease_leads_other(two_one, 4, 3, "a"));
    assert_true(host__lease_leads_other(two_one, 4, 3, "b"));
    assert_false(host__lease_leads_other(two_one, 4, 3, "c"));
    assert_false(host__lease_leads_other(two_one, 4, 1, "b"));             /* only this one */
}

static void test_namespace_and_identity(void **state)
{
    char ns[64], id[254];
    (void)state;
    host__leader_namespace("ray-system", ns, sizeof(ns));
    assert_string_equal(ns, "ray-system");
    host__leader_namespace("", ns, sizeof(ns));
    /* out of a Pod there is no service account file here */
    assert_string_equal(ns, access("/var/run/secrets/kubernetes.io/serviceaccount/namespace", R_OK)
                                == 0 ? ns : "default");
    setenv("POD_NAME", "operator-7d9f-x2", 1);
    assert_int_equal(host__leader_identity(id, sizeof(id)), 0);
    assert_string_equal(id, "operator-7d9f-x2");
    unsetenv("POD_NAME");
    assert_int_equal(host__leader_identity(id, sizeof(id)), 0);
    char hn[254];
    gethostname(hn, sizeof(hn));
    assert_string_equal(id, hn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_from_json),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_namespace_and_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
