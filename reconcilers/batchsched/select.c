/*
 * select.c - which batch scheduler the operator runs with (KubeRay's
 * ValidateBatchSchedulerConfig and getSchedulerFactory) and the dispatch of
 * AddMetadataToChildResource to it. The scheduler files' shared setters are in
 * meta.c, so calls go one way: select.c -> a scheduler's file -> meta.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kobj/kobj.h"
#include "reconcilers/batchsched/internal.h"

static const char *const names[] = {
    [BATCHSCHED_NONE] = "",
    [BATCHSCHED_VOLCANO] = "volcano",
    [BATCHSCHED_YUNIKORN] = "yunikorn",
    [BATCHSCHED_KAI] = "kai-scheduler",
    [BATCHSCHED_SCHEDULER_PLUGINS] = "scheduler-plugins",
    [BATCHSCHED_KUBERNETES_WAS] = "kubernetes-was-v1alpha2",
};

const char *batchsched_name(enum batchsched_kind k)
{
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "";
}

int batchsched_select(const char *name, bool enable_legacy, bool was_gate,
                      enum batchsched_kind *out, char *err, size_t errlen)
{
    bool named = name && *name;
    *out = BATCHSCHED_NONE;
    if (err && errlen)
        err[0] = '\0';
    if (was_gate) {
        if (enable_legacy || named) {
            snprintf(err, errlen, "the KubernetesWAS feature gate cannot be combined with "
                     "--batch-scheduler or --enable-batch-scheduler");
            return -EINVAL;
        }
        *out = BATCHSCHED_KUBERNETES_WAS;
        return 0;
    }
    if (enable_legacy && named) {
        snprintf(err, errlen, "both feature flags enable-batch-scheduler (deprecated) and "
                 "batch-scheduler are set. Please use batch-scheduler only");
        return -EINVAL;
    }
    if (enable_legacy) {
        *out = BATCHSCHED_VOLCANO;
        return 0;
    }
    if (!named)
        return 0;
    for (int k = BATCHSCHED_VOLCANO; k <= BATCHSCHED_SCHEDULER_PLUGINS; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = (enum batchsched_kind)k;
            return 0;
        }
    }
    snprintf(err, errlen, "scheduler is not supported, name=%s", name);
    return -EINVAL;
}

int batchsched_child_meta(enum batchsched_kind k, const struct batchsched_parent *p,
                          cJSON *child, bool has_podspec, const char *group)
{
    if (!p || !p->obj || !child)
        return 0;
    switch (k) {
    case BATCHSCHED_VOLCANO:
        return batchsched__volcano_child(p, child, has_podspec, group ? group : "");
    case BATCHSCHED_YUNIKORN:
        return batchsched__yunikorn_child(p, child, has_podspec, group ? group : "");
    case BATCHSCHED_KAI:
        return batchsched__kai_child(p, child, has_podspec);
    case BATCHSCHED_SCHEDULER_PLUGINS:
        return batchsched__sp_child(p, child, has_podspec);
    case BATCHSCHED_KUBERNETES_WAS:
        return batchsched__was_child(p, child, has_podspec);
    case BATCHSCHED_NONE:
        break;
    }
    return 0;
}
