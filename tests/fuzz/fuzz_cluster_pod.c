/* fuzz_cluster_pod.c - the simulated scheduler's parsers on outside bytes.
 * The first byte picks the target; the rest is:
 *   0: a resource.Quantity string for kobj_quantity_parse;
 *   else: JSON taken as a Pod and as a Node - requests, allocatable, the fit filters
 *   (taints/tolerations, nodeSelector), the score and the FailedScheduling text.
 * Every input must give a result or an error: no crash, no read past the input,
 * no undefined arithmetic (UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kobj/quantity.h"
#include "kubesim/cluster/cluster.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;
    int64_t m;

    if (!(s = fuzz_text(data, size, 65536)))
        return 0;
    if (data[0] == 0) {
        (void)kobj_quantity_parse(s, &m);
    } else {
        cJSON *o = cJSON_ParseWithOpts(s, NULL, 0);
        if (o) {
            struct cluster_res req, alloc, used = { 0 };
            char taint[64], msg[512];
            unsigned fits[2];

            cluster_pod_requests(o, &req);
            cluster_node_allocatable(o, &alloc);
            used = alloc;
            fits[0] = cluster_node_fits(o, &req, o, &alloc, &used, taint, sizeof(taint));
            fits[1] = cluster_node_fits(o, &req, o, &alloc, &(struct cluster_res){ 0 }, NULL, 0);
            (void)cluster_node_score(&req, &alloc, &used);
            cluster_unsched_message(2, fits, taint, msg, sizeof(msg));
            cJSON_Delete(o);
        }
    }
    free(s);
    return 0;
}
