/* fuzz_volcano_conf.c - the reader of a user's volcano-scheduler.conf (the ConfigMap
 * volcano-system/volcano-scheduler-configmap) in kubesim's gang step: the input is
 * the conf's bytes, not terminated. Every input must give a set of actions (and the
 * plugins' enableHierarchy / enablePreemptable / enableReclaimable flags): no crash,
 * no read past the input (ASan), no undefined arithmetic (UBSan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;

    if (size > 256 * 1024)
        return 0;
    /* a copy of exactly size bytes, so ASan sees a read past the end */
    if (!(s = malloc(size ? size : 1)))
        return 0;
    memcpy(s, data, size);
    unsigned a = cluster__volcano_actions_parse(s, size);
    if (a & ~(VOLCANO_PREEMPT | VOLCANO_RECLAIM | VOLCANO_HIERARCHY | VOLCANO_PLUGIN_OFF))
        abort();
    free(s);
    return 0;
}
