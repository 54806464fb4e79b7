/* test_registry.c - unit tests of sim/registry*: the built-in table's discovery data,
 * CRD validation causes, registration/replacement/removal of the KubeRay CRDs and
 * the status the server writes back for a CRD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "kubesim/registry/registry.h"
#include "tests/unit/yaml_fixture.h"
#include "tests/unit/shared_fixture.h"
#include "util/util.h"

static bool strv_has(char *const *v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static bool labels_have(const char *const *v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static const struct reg_subresource *sub(const struct reg_resource *res, const char *name)
{
    for (size_t i = 0; i < res->n_subresources; i++)
        if (strcmp(res->subresources[i].name, name) == 0)
            return &res->subresources[i];
    return NULL;
}

static void test_builtins_discovery_data(void **state)
{
    struct registry *r;
    const struct reg_resource *p;
    static const struct {
        const char *group, *plural, *kind, *short_name;
        bool namespaced, in_all;
    } want[] = {
        { "", "pods", "Pod", "po", true, true },
        { "", "services", "Service", "svc", true, true },
        { "", "namespaces", "Namespace", "ns", false, false },
        { "", "nodes", "Node", "no", false, false },
        { "", "events", "Event", "ev", true, false },
        { "", "configmaps", "ConfigMap", "cm", true, false },
        { "", "serviceaccounts", "ServiceAccount", "sa", true, false },
        { "", "persistentvolumeclaims", "PersistentVolumeClaim", "pvc", true, false },
        { "", "endpoints", "Endpoints", "ep", true, false },
        { "", "secrets", "Secret", NULL, true, false },
        { "batch", "jobs", "Job", NULL, true, true },
        { "coordination.k8s.io", "leases", "Lease", NULL, true, false },
        { "events.k8s.io", "events", "Event", "ev", true, false },
        { "rbac.authorization.k8s.io", "roles", "Role", NULL, true, false },
        { "rbac.authorization.k8s.io", "rolebindings", "RoleBinding", NULL, true, false },
        { "rbac.authorization.k8s.io", "clusterroles", "ClusterRole", NULL, false, false },
        { "apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", "crd",
          false, false },
        { "discovery.k8s.io", "endpointslices", "EndpointSlice", NULL, true, false },
        { "networking.k8s.io", "ingresses", "Ingress", "ing", true, false },
        { "networking.k8s.io", "ingressclasses", "IngressClass", NULL, false, false },
    };
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        p = registry_find(r, want[i].group, "v1", want[i].plural);
        assert_non_null(p);
        assert_string_equal(p->kind, want[i].kind);
        assert_true(p->builtin);
        assert_non_null(p->smp_kind);
        assert_int_equal(p->namespaced, want[i].namespaced);
        assert_int_equal(strv_has(p->categories, "all"), want[i].in_all);
        if (want[i].short_name)
            assert_true(strv_has(p->short_names, want[i].short_name));
        else
            assert_null(p->short_names[0]);
        assert_ptr_equal(registry_find_kind(r, want[i].group, "v1", want[i].kind), p);
        assert_true(p->verbs & REG_WATCH);
    }
    p = registry_find(r, "", "v1", "pods");
    assert_string_equal(p->singular, "pod");
    assert_string_equal(p->list_kind, "PodList");
    assert_string_equal(p->smp_kind, "Pod");
    assert_true(p->flags & REG_FLAG_GRACEFUL_DELETE);
    assert_true(p->has_status);
    assert_int_equal(p->verbs, REG_ALL);
    assert_true(labels_have(p->field_labels, "spec.nodeName"));
    assert_true(labels_have(p->field_labels, "status.phase"));
    assert_true(labels_have(p->field_labels, "status.podIP"));
    assert_non_null(sub(p, "log"));
    assert_int_equal(sub(p, "binding")->verbs, REG_CREATE);
    assert_string_equal(sub(p, "eviction")->group, "policy");
    assert_string_equal(sub(p, "eviction")->kind, "Eviction");
    assert_non_null(sub(registry_find(r, "", "v1", "services"), "proxy"));
    assert_non_null(sub(registry_find(r, "", "v1", "namespaces"), "finalize"));
    /* namespaces cannot be deletecollection'ed on a real server */
    assert_false(registry_find(r, "", "v1", "namespaces")->verbs & REG_DELETECOLLECTION);
    assert_true(labels_have(registry_find(r, "", "v1", "events")->field_labels,
                            "involvedObject.uid"));
    assert_true(labels_have(registry_find(r, "", "v1", "secrets")->field_labels, "type"));
    assert_true(labels_have(registry_find(r, "", "v1", "nodes")->field_labels,
                            "spec.unschedulable"));
    assert_true(labels_have(registry_find(r, "batch", "v1", "jobs")->field_labels,
                            "status.successful"));
    assert_false(registry_find(r, "", "v1", "configmaps")->flags & REG_FLAG_GRACEFUL_DELETE);
    /* plural lookups only; not served -> NULL */
    assert_null(registry_find(r, "", "v1", "po"));
    assert_null(registry_find(r, "", "v2", "pods"));
    assert_null(registry_find(r, "apps", "v1", "statefulsets"));
    assert_null(registry_find_kind(r, "", "v1", "Deployment"));
    /* Deployments and ReplicaSets: with /status and /scale (spec.replicas, status.replicas) */
    assert_non_null(registry_find_kind(r, "apps", "v1", "Deployment"));
    assert_true(registry_find(r, "apps", "v1", "deployments")->has_scale);
    assert_true(registry_find(r, "apps", "v1", "deployments")->has_status);
    assert_string_equal(registry_find(r, "apps", "v1", "replicasets")->scale_spec_path, ".spec.replicas");
    assert_non_null(registry_find(r, "policy", "v1", "poddisruptionbudgets"));
    registry_free(r);
}

static void test_builtins_grouped_core_first(void **state)
{
    struct registry *r;
    const char *seen[32];
    size_t nseen = 0;
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    assert_string_equal(registry_at(r, 0)->group, "");
    assert_null(registry_at(r, registry_count(r)));
    /* a group, once left, never reappears */
    for (size_t i = 0; i < registry_count(r); i++) {
        const char *g = registry_at(r, i)->group;
        if (nseen && strcmp(seen[nseen - 1], g) == 0)
            continue;
        for (size_t j = 0; j < nseen; j++)
            assert_string_not_equal(seen[j], g);
        seen[nseen++] = g;
    }
    /* core, admissionregistration, apiextensions, apps, batch, coordination, discovery,
     * events, networking, policy, rbac, scheduling (v1 PriorityClass, v1alpha2 Workload /
     * PodGroup) */
    assert_int_equal(nseen, 12);
    registry_free(r);
}

static void test_verb_names_sorted(void **state)
{
    const char *v[8];
    (void)state;
    assert_int_equal(registry_verb_names(REG_ALL, v), 8);
    assert_string_equal(v[0], "create");
    assert_string_equal(v[2], "deletecollection");
    assert_string_equal(v[7], "watch");
    assert_int_equal(registry_verb_names(REG_GET | REG_PATCH | REG_UPDATE, v), 3);
    assert_string_equal(v[0], "get");
    assert_string_equal(v[1], "patch");
    assert_string_equal(v[2], "update");
    assert_int_equal(registry_verb_names(0, v), 0);
}

static cJSON *load_crd(const char *file)
{
    char path[700];
    cJSON *c;

    snprintf(path, sizeof(path), "%s/kuberay/crds/%s", shared_fixture_dir(), file);
    c = yaml_fixture_load(path);
    assert_non_null(c);
    return c;
}

static void test_kuberay_crds_register(void **state)
{
    static const struct {
        const char *file, *plural, *kind;
    } crds[] = {
        { "ray.io_rayclusters.yaml", "rayclusters", "RayCluster" },
        { "ray.io_rayjobs.yaml", "rayjobs", "RayJob" },
        { "ray.io_rayservices.yaml", "rayservices", "RayService" },
        { "ray.io_raycronjobs.yaml", "raycronjobs", "RayCronJob" },
    };
    struct registry *r;
    char err[256];
    unsigned long gen;
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    for (size_t i = 0; i < 4; i++) {
        cJSON *crd = load_crd(crds[i].file), *causes = cJSON_CreateArray();
        const struct reg_resource *v1;
        assert_int_equal(registry_validate_crd(crd, causes), 0);
        assert_int_equal(cJSON_GetArraySize(causes), 0);
        gen = registry_generation(r);
        assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
        assert_true(registry_generation(r) > gen);
        v1 = registry_find(r, "ray.io", "v1", crds[i].plural);
        assert_non_null(v1);
        assert_string_equal(v1->kind, crds[i].kind);
        assert_true(v1->has_status);
        assert_true(v1->storage);
        assert_false(v1->builtin);
        assert_null(v1->smp_kind);
        assert_true(v1->namespaced);
        assert_true(strv_has(v1->categories, "all"));
        assert_non_null(v1->openapi_schema);
        assert_non_null(v1->schema);   /* compiled */
        assert_non_null(v1->crd_name);
        assert_ptr_equal(registry_find_kind(r, "ray.io", "v1", crds[i].kind), v1);
        cJSON_Delete(causes);
        cJSON_Delete(crd);
    }
    /* rayclusters: the deprecated v1alpha1 is served too, not as storage */
    const struct reg_resource *a = registry_find(r, "ray.io", "v1alpha1", "rayclusters");
    const struct reg_resource *c = registry_find(r, "ray.io", "v1", "rayclusters");
    assert_non_null(a);
    assert_false(a->storage);
    assert_string_equal(c->crd_name, "rayclusters.ray.io");
    assert_string_equal(c->singular, "raycluster");
    assert_string_equal(c->list_kind, "RayClusterList");
    assert_int_equal(c->n_columns, 10);
    assert_string_equal(c->columns[0].name, "desired workers");
    assert_string_equal(c->columns[0].type, "integer");
    assert_string_equal(c->columns[0].json_path, ".status.desiredWorkerReplicas");
    assert_int_equal(c->columns[0].priority, 0);
    assert_string_equal(c->columns[8].name, "head pod IP");
    assert_int_equal(c->columns[8].priority, 1);
    assert_non_null(registry_find(r, "ray.io", "v1alpha1", "rayjobs"));
    assert_true(registry_find(r, "ray.io", "v1alpha1", "rayjobs")->deprecated);
    assert_non_null(registry_find(r, "ray.io", "v1alpha1", "rayjobs")->deprecation_warning);
    assert_false(c->deprecated);
    registry_free(r);
}

static void test_crd_replace_and_remove(void **state)
{
    struct registry *r;
    cJSON *crd = load_crd("ray.io_rayclusters.yaml");
    cJSON *versions = cJSON_GetObjectItem(cJSON_GetObjectItem(crd, "spec"), "versions");
    const struct reg_resource *old_v1, *old_alpha;
    char err[256];
    size_t base;
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    base = registry_count(r);
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
    assert_int_equal(registry_count(r), base + 2);
    old_v1 = registry_find(r, "ray.io", "v1", "rayclusters");
    old_alpha = registry_find(r, "ray.io", "v1alpha1", "rayclusters");
    assert_non_null(old_alpha);
    /* stop serving v1alpha1, add a short name: re-adding replaces the registration */
    for (int i = 0; i < cJSON_GetArraySize(versions); i++) {
        cJSON *v = cJSON_GetArrayItem(versions, i);
        if (strcmp(cJSON_GetObjectItem(v, "name")->valuestring, "v1alpha1") == 0)
            cJSON_ReplaceItemInObject(v, "served", cJSON_CreateFalse());
    }
    cJSON *sn = cJSON_CreateArray();
    cJSON_AddItemToArray(sn, cJSON_CreateString("rc"));
    cJSON_AddItemToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(crd, "spec"), "names"),
                          "shortNames", sn);
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
    assert_int_equal(registry_count(r), base + 1);
    assert_null(registry_find(r, "ray.io", "v1alpha1", "rayclusters"));
    assert_true(strv_has(registry_find(r, "ray.io", "v1", "rayclusters")->short_names, "rc"));
    /* the retired resource is still readable by whoever holds it */
    assert_string_equal(old_v1->kind, "RayCluster");
    assert_string_equal(old_alpha->version, "v1alpha1");
    unsigned long gen = registry_generation(r);
    registry_remove_crd(r, "rayclusters.ray.io");
    assert_true(registry_generation(r) > gen);
    assert_int_equal(registry_count(r), base);
    assert_null(registry_find(r, "ray.io", "v1", "rayclusters"));
    registry_remove_crd(r, "rayclusters.ray.io");  /* idempotent */
    assert_int_equal(registry_count(r), base);
    registry_free(r);
    cJSON_Delete(crd);
}

static cJSON *minimal_crd(void)
{
    const char *text =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"widgets.example.com\"},"
        "\"spec\":{\"group\":\"example.com\",\"scope\":\"Cluster\","
        "\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}},"
        "\"subresources\":{\"status\":{},\"scale\":{\"specReplicasPath\":\".spec.replicas\","
        "\"statusReplicasPath\":\".status.replicas\"}}}]}}";
    cJSON *c = cJSON_Parse(text);
    assert_non_null(c);
    return c;
}

static void test_minimal_crd_defaults(void **state)
{
    struct registry *r;
    cJSON *crd = minimal_crd();
    const struct reg_resource *w;
    char err[256];
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), 0);
    w = registry_find(r, "example.com", "v1", "widgets");
    assert_non_null(w);
    assert_false(w->namespaced);
    assert_string_equal(w->singular, "widget");
    assert_string_equal(w->list_kind, "WidgetList");
    assert_true(w->has_scale);
    assert_string_equal(w->scale_spec_path, ".spec.replicas");
    assert_string_equal(w->scale_status_path, ".status.replicas");
    assert_null(w->scale_selector_path);
    assert_int_equal(w->n_columns, 0);
    assert_null(w->short_names[0]);
    registry_free(r);
    cJSON_Delete(crd);
}

/* Applies a JSON mutation to the minimal CRD and checks the named field is reported. */
static void expect_invalid(const char *path_key, cJSON *(*mutate)(cJSON *), const char *field,
                           const char *reason)
{
    cJSON *crd = minimal_crd(), *causes = cJSON_CreateArray(), *it;
    struct registry *r;
    char err[256];
    bool found = false;
    (void)path_key;

    mutate(crd);
    assert_int_equal(registry_validate_crd(crd, causes), -EINVAL);
    cJSON_ArrayForEach(it, causes) {
        if (strcmp(cJSON_GetObjectItem(it, "field")->valuestring, field) == 0 &&
            strcmp(cJSON_GetObjectItem(it, "reason")->valuestring, reason) == 0)
            found = true;
        assert_true(cJSON_IsString(cJSON_GetObjectItem(it, "message")));
    }
    if (!found) {
        char *s = cJSON_PrintUnformatted(causes);
        print_error("want %s %s in %s\n", field, reason, s);
        free(s);
    }
    assert_true(found);
    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), -EINVAL);
    assert_true(err[0] != '\0');
    assert_null(registry_find(r, "example.com", "v1", "widgets"));
    registry_free(r);
    cJSON_Delete(causes);
    cJSON_Delete(crd);
}

static cJSON *spec_of(cJSON *crd) { return cJSON_GetObjectItem(crd, "spec"); }
static cJSON *v0_of(cJSON *crd)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(spec_of(crd), "versions"), 0);
}
static cJSON *m_name(cJSON *c)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(c, "metadata"), "name",
                              cJSON_CreateString("gadgets.example.com"));
    return c;
}
static cJSON *m_scope(cJSON *c)
{
    cJSON_ReplaceItemInObject(spec_of(c), "scope", cJSON_CreateString("Global"));
    return c;
}
static cJSON *m_no_plural(cJSON *c)
{
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(spec_of(c), "names"), "plural");
    return c;
}
static cJSON *m_bad_kind(cJSON *c)
{
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(spec_of(c), "names"), "kind",
                              cJSON_CreateString("Wid get"));
    return c;
}
static cJSON *m_group_nodot(cJSON *c)
{
    cJSON_ReplaceItemInObject(spec_of(c), "group", cJSON_CreateString("example"));
    return c;
}
static cJSON *m_no_versions(cJSON *c)
{
    cJSON_ReplaceItemInObject(spec_of(c), "versions", cJSON_CreateArray());
    return c;
}
static cJSON *m_no_storage(cJSON *c)
{
    cJSON_ReplaceItemInObject(v0_of(c), "storage", cJSON_CreateFalse());
    return c;
}
static cJSON *m_two_storage(cJSON *c)
{
    cJSON *v2 = cJSON_Duplicate(v0_of(c), 1);
    cJSON_ReplaceItemInObject(v2, "name", cJSON_CreateString("v2"));
    cJSON_AddItemToArray(cJSON_GetObjectItem(spec_of(c), "versions"), v2);
    return c;
}
static cJSON *m_dup_version(cJSON *c)
{
    cJSON *v2 = cJSON_Duplicate(v0_of(c), 1);
    cJSON_ReplaceItemInObject(v2, "storage", cJSON_CreateFalse());
    cJSON_AddItemToArray(cJSON_GetObjectItem(spec_of(c), "versions"), v2);
    return c;
}
static cJSON *m_no_schema(cJSON *c)
{
    cJSON_DeleteItemFromObject(v0_of(c), "schema");
    return c;
}
static cJSON *m_no_served(cJSON *c)
{
    cJSON_DeleteItemFromObject(v0_of(c), "served");
    return c;
}
static cJSON *m_bad_column(cJSON *c)
{
    cJSON *cols = cJSON_Parse("[{\"name\":\"x\",\"type\":\"float\",\"jsonPath\":\".spec.x\"}]");
    cJSON_AddItemToObject(v0_of(c), "additionalPrinterColumns", cols);
    return c;
}
static cJSON *m_bad_scale(cJSON *c)
{
    cJSON *scale = cJSON_GetObjectItem(cJSON_GetObjectItem(v0_of(c), "subresources"), "scale");
    cJSON_ReplaceItemInObject(scale, "specReplicasPath", cJSON_CreateString("replicas"));
    return c;
}
static cJSON *m_bad_short(cJSON *c)
{
    cJSON_AddItemToObject(cJSON_GetObjectItem(spec_of(c), "names"), "shortNames",
                          cJSON_Parse("[\"ok\",\"NotOK\"]"));
    return c;
}
static cJSON *m_bad_schema(cJSON *c)
{
    cJSON *sch = cJSON_GetObjectItem(cJSON_GetObjectItem(v0_of(c), "schema"), "openAPIV3Schema");
    cJSON_ReplaceItemInObject(sch, "type", cJSON_CreateString("nosuchtype"));
    return c;
}
static cJSON *m_spec_string(cJSON *c)
{
    cJSON_ReplaceItemInObject(c, "spec", cJSON_CreateString("x"));
    return c;
}

static void test_invalid_crds_rejected_with_causes(void **state)
{
    (void)state;
    expect_invalid("name", m_name, "metadata.name", "FieldValueInvalid");
    expect_invalid("scope", m_scope, "spec.scope", "FieldValueNotSupported");
    expect_invalid("plural", m_no_plural, "spec.names.plural", "FieldValueRequired");
    expect_invalid("kind", m_bad_kind, "spec.names.kind", "FieldValueInvalid");
    expect_invalid("group", m_group_nodot, "spec.group", "FieldValueInvalid");
    expect_invalid("versions", m_no_versions, "spec.versions", "FieldValueRequired");
    expect_invalid("storage0", m_no_storage, "spec.versions", "FieldValueInvalid");
    expect_invalid("storage2", m_two_storage, "spec.versions", "FieldValueInvalid");
    expect_invalid("dup", m_dup_version, "spec.versions", "FieldValueInvalid");
    expect_invalid("schema", m_no_schema, "spec.versions[0].schema.openAPIV3Schema",
                   "FieldValueRequired");
    expect_invalid("served", m_no_served, "spec.versions[0].served", "FieldValueRequired");
    expect_invalid("column", m_bad_column, "spec.versions[0].additionalPrinterColumns[0].type",
                   "FieldValueNotSupported");
    expect_invalid("scale", m_bad_scale, "spec.versions[0].subresources.scale.specReplicasPath",
                   "FieldValueInvalid");
    expect_invalid("short", m_bad_short, "spec.names.shortNames[1]", "FieldValueInvalid");
    expect_invalid("spec", m_spec_string, "spec", "FieldValueRequired");
    /* the schema must compile (kubesim/schema/schema.c) */
    expect_invalid("badschema", m_bad_schema, "spec.versions[0].schema.openAPIV3Schema",
                   "FieldValueInvalid");
}

static void test_crd_cannot_shadow_builtin(void **state)
{
    struct registry *r;
    cJSON *crd = cJSON_Parse(
        "{\"metadata\":{\"name\":\"roles.rbac.authorization.k8s.io\"},"
        "\"spec\":{\"group\":\"rbac.authorization.k8s.io\",\"scope\":\"Namespaced\","
        "\"names\":{\"plural\":\"roles\",\"kind\":\"Role\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}");
    char err[256];
    (void)state;

    assert_int_equal(registry_new(&r), 0);
    assert_int_equal(registry_add_crd(r, crd, err, sizeof(err)), -EEXIST);
    assert_true(registry_find(r, "rbac.authorization.k8s.io", "v1", "roles")->builtin);
    registry_free(r);
    cJSON_Delete(crd);
}

static void test_crd_set_status(void **state)
{
    cJSON *crd = load_crd("ray.io_rayjobs.yaml"), *st, *conds, *it;
    char first_ltt[40] = "";
    int n_true = 0;
    (void)state;

    assert_int_equal(registry_crd_set_status(crd), 0);
    st = cJSON_GetObjectItem(crd, "status");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "acceptedNames"),
                                            "kind")->valuestring, "RayJob");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "acceptedNames"),
                                            "plural")->valuestring, "rayjobs");
    conds = cJSON_GetObjectItem(st, "conditions");
    cJSON_ArrayForEach(it, conds) {
        const char *t = cJSON_GetObjectItem(it, "type")->valuestring;
        assert_true(strcmp(t, "Established") == 0 || strcmp(t, "NamesAccepted") == 0);
        assert_string_equal(cJSON_GetObjectItem(it, "status")->valuestring, "True");
        time_t when;
        assert_int_equal(util_parse_time(
            cJSON_GetObjectItem(it, "lastTransitionTime")->valuestring, &when), 0);
        if (!first_ltt[0])
            snprintf(first_ltt, sizeof(first_ltt), "%s",
                     cJSON_GetObjectItem(it, "lastTransitionTime")->valuestring);
        n_true++;
    }
    assert_int_equal(n_true, 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(st, "storedVersions")), 1);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "storedVersions"), 0)
                            ->valuestring, "v1");
    /* idempotent: a second call neither duplicates conditions nor stored versions */
    assert_int_equal(registry_crd_set_status(crd), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(st, "conditions")), 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(st, "storedVersions")), 1);
    assert_int_equal(registry_crd_set_status(NULL), -EINVAL);
    cJSON_Delete(crd);
}

static bool has_cause(const cJSON *causes, const char *field, const char *msg_part)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, causes)
        if (strcmp(cJSON_GetObjectItem(c, "field")->valuestring, field) == 0 &&
            strstr(cJSON_GetObjectItem(c, "message")->valuestring, msg_part))
            return true;
    return false;
}

static void test_crd_update_rules(void **state)
{
    cJSON *old = minimal_crd(), *upd, *causes;
    (void)state;

    /* not yet Established: kind and scope may change, group and plural never */
    upd = cJSON_Duplicate(old, 1);
    cJSON_ReplaceItemInObject(spec_of(upd), "scope", cJSON_CreateString("Namespaced"));
    causes = cJSON_CreateArray();
    assert_int_equal(registry_validate_crd_update(old, upd, causes), 0);
    assert_int_equal(cJSON_GetArraySize(causes), 0);
    cJSON_ReplaceItemInObject(spec_of(upd), "group", cJSON_CreateString("other.com"));
    assert_int_equal(registry_validate_crd_update(old, upd, causes), -EINVAL);
    assert_true(has_cause(causes, "spec.group", "field is immutable"));
    cJSON_Delete(causes);
    cJSON_Delete(upd);

    /* Established (set_status) with v1 stored: scope/kind frozen, v1 must stay */
    assert_int_equal(registry_crd_set_status(old), 0);
    upd = cJSON_Duplicate(old, 1);
    cJSON_ReplaceItemInObject(spec_of(upd), "scope", cJSON_CreateString("Namespaced"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(spec_of(upd), "names"), "kind",
                              cJSON_CreateString("Gadget"));
    cJSON_ReplaceItemInObject(v0_of(upd), "name", cJSON_CreateString("v2"));
    causes = cJSON_CreateArray();
    assert_int_equal(registry_validate_crd_update(old, upd, causes), -EINVAL);
    assert_true(has_cause(causes, "spec.scope", "field is immutable"));
    assert_true(has_cause(causes, "spec.names.kind", "field is immutable"));
    assert_true(has_cause(causes, "status.storedVersions[0]", "must appear in spec.versions"));
    assert_int_equal(cJSON_GetArraySize(causes), 3);
    cJSON_Delete(causes);
    /* an identical update is fine */
    causes = cJSON_CreateArray();
    assert_int_equal(registry_validate_crd_update(old, old, causes), 0);
    assert_int_equal(registry_validate_crd_update(NULL, old, causes), -EINVAL);
    cJSON_Delete(causes);
    cJSON_Delete(upd);
    cJSON_Delete(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_discovery_data),
        cmocka_unit_test(test_builtins_grouped_core_first),
        cmocka_unit_test(test_verb_names_sorted),
        cmocka_unit_test(test_kuberay_crds_register),
        cmocka_unit_test(test_crd_replace_and_remove),
        cmocka_unit_test(test_minimal_crd_defaults),
        cmocka_unit_test(test_invalid_crds_rejected_with_causes),
        cmocka_unit_test(test_crd_cannot_shadow_builtin),
        cmocka_unit_test(test_crd_set_status),
        cmocka_unit_test(test_crd_update_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
