/* fuzz_rc_build.c - the RayCluster builders on arbitrary JSON taken as a RayCluster:
 * rc_validate and then every builder (head/worker Pods for each group, multi-host
 * included, the three Services, RBAC, the Redis cleanup Job, the Ingress, the auth
 * Secret, the ray start commands, desired resources, the spec hash), whether or not
 * validation passed - the reconcile loop never builds an invalid cluster, but nothing
 * may crash if it did. The first byte sets operator options.
 * No crash, no leak, no undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reconcilers/raycluster/build.h"
#include "tests/fuzz/fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_build_opts o;
    struct rc_invalid why;
    struct rc_resources res;
    char buf[512], hash[40];
    cJSON *rc, *g, *obj, *sa, *role, *rb;
    char *s;
    int err;

    if (!(s = fuzz_text(data, size, 65536)))
        return 0;
    rc = cJSON_ParseWithOpts(s, NULL, 0);
    free(s);
    if (!rc)
        return 0;
    rc_build_opts_default(&o);
    o.enable_init_container_injection = data[0] & 1;
    o.use_deterministic_head_name = data[0] & 2;
    o.enable_probes_injection = data[0] & 4;
    o.enable_head_cluster_ip_service = data[0] & 8;
    o.enable_login_shell = data[0] & 16;

    (void)rc_validate(rc, NULL, &why);
    (void)rc_validate_warning(rc, &why);
    (void)rc_managed_elsewhere(rc);
    (void)rc_head_service_name(rc, buf, sizeof(buf));
    (void)rc_head_service_fqdn(rc, &o, buf, sizeof(buf));
    (void)rc_dashboard_port(rc);
    (void)rc_head_port(rc);
    (void)rc_gcs_ft_deletion_timeout(rc);
    (void)rc_spec_hash(rc, hash, sizeof(hash));
    (void)rc_desired_resources(rc, &res);
    cJSON_Delete(rc_build_head_pod(rc, &o, &err));
    cJSON_Delete(rc_build_head_service(rc, &o, &err));
    cJSON_Delete(rc_build_serve_service(rc, &o, &err));
    cJSON_Delete(rc_build_headless_service(rc, &o, &err));
    cJSON_Delete(rc_build_redis_cleanup_job(rc, &o, &err));
    cJSON_Delete(rc_build_head_ingress(rc, &o, &err));
    {
        cJSON *nps = rc_build_network_policies(rc, &err), *np;
        cJSON_ArrayForEach(np, nps)
            rc_netpol_normalize(np);
        cJSON_Delete(nps);
    }
    {
        char drift[512];
        cJSON *pvc = rc_build_gcs_pvc(rc, &err);
        if (pvc)
            rc_gcs_pvc_drift(pvc, rc, drift, sizeof(drift));
        cJSON_Delete(pvc);
    }
    cJSON_Delete(rc_build_auth_secret(rc, data, size, &err));
    free(rc_build_ray_start_cmd(rc, NULL, &o));
    if (rc_build_autoscaler_rbac(rc, &sa, &role, &rb) == 0) {
        cJSON_Delete(sa);
        cJSON_Delete(role);
        cJSON_Delete(rb);
    }
    g = cJSON_GetObjectItem(cJSON_GetObjectItem(rc, "spec"), "workerGroupSpecs");
    if (cJSON_IsArray(g)) {
        int i = 0;
        cJSON *w;
        cJSON_ArrayForEach(w, g) {
            if (i++ >= 8)
                break;
            (void)rc_worker_desired_replicas(w);
            free(rc_build_ray_start_cmd(rc, w, &o));
            obj = rc_build_worker_pod(rc, w, "grp-abcde", i, i, &o, &err);
            cJSON_Delete(obj);
        }
    }
    cJSON_Delete(rc);
    return 0;
}
