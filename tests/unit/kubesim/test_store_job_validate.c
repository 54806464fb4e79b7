/* test_store_job_validate.c - 422 validation of a Job's pod template
 * (ValidatePodTemplateSpec as validateJobSpec applies it): template labels and
 * annotations under spec.template.labels/annotations whether or not the Job has
 * labels of its own, container names and images, ephemeral containers, a
 * manual selector that does not match the template labels, and the generated
 * selector and labels (a user selector or a conflicting label without
 * manualSelector). */
#include "tests/unit/kubesim/store_testlib.h"

static struct store *S;
static const struct reg_resource *JOBS;

static int setup(void **state)
{
    (void)state;
    S = tl_open(NULL, 1000);
    JOBS = tl_res(S, "batch", "v1", "jobs");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(S);
    S = NULL;
    return 0;
}

/* A Job: job_meta and tmpl_meta are JSON members (without braces) of the Job's
 * and the template's metadata, spec_extra members of the Job spec, containers
 * the template's containers array. */
static cJSON *job(const char *name, const char *job_meta, const char *tmpl_meta,
                  const char *spec_extra, const char *containers)
{
    return tl_json("{\"metadata\":{\"name\":\"%s\"%s%s},\"spec\":{%s%s\"template\":{"
                   "\"metadata\":{%s},\"spec\":{\"restartPolicy\":\"Never\",\"containers\":%s}}}}",
                   name, job_meta ? "," : "", job_meta ? job_meta : "",
                   spec_extra ? spec_extra : "", spec_extra ? "," : "",
                   tmpl_meta ? tmpl_meta : "",
                   containers ? containers : "[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]");
}

/* Creates obj, expecting 422; returns the fields of the causes joined by ' '. */
static const char *rejected(cJSON *obj, struct store_status *st, char *fields, size_t n)
{
    struct store_obj *o = NULL;
    const cJSON *c;
    size_t off = 0;

    assert_int_equal(store_create(S, JOBS, "default", obj, NULL, &o, st), -EINVAL);
    assert_null(o);
    assert_int_equal(st->code, 422);
    fields[0] = 0;
    cJSON_ArrayForEach(c, st->causes)
        off += (size_t)snprintf(fields + off, n - off, "%s%s", off ? " " : "",
                                cJSON_GetStringValue(cJSON_GetObjectItem(c, "field")));
    return fields;
}

static void test_template_labels_with_job_labels(void **state)
{
    struct store_status st = { 0 };
    char f[512];

    (void)state;
    /* the reported case: the Job's own labels are fine, the template's are not */
    rejected(job("bad-tl", "\"labels\":{\"team\":\"a\"}", "\"labels\":{\"app\":\"has space\"}",
                 NULL, NULL), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.labels");
    assert_non_null(strstr(st.message, "Job.batch \"bad-tl\" is invalid: spec.template.labels: "
                                       "Invalid value: \"has space\": a valid label must be"));
    store_status_clear(&st);
    rejected(job("bad-key", "\"labels\":{\"team\":\"a\"}", "\"labels\":{\"-x\":\"v\"}", NULL,
                 NULL), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.labels");
    assert_non_null(strstr(st.message, "Invalid value: \"-x\": name part must consist of"));
    store_status_clear(&st);
    /* without Job labels the template's are copied up (SetDefaults_Job), so both report */
    rejected(job("bad-both", NULL, "\"labels\":{\"app\":\"has space\"}", NULL, NULL), &st, f,
             sizeof(f));
    assert_non_null(strstr(f, "spec.template.labels"));
    assert_non_null(strstr(f, "metadata.labels"));
    store_status_clear(&st);
}

static void test_template_annotations(void **state)
{
    struct store_status st = { 0 };
    char f[512];
    static char big[300 * 1024];

    (void)state;
    rejected(job("bad-ann", "\"labels\":{\"team\":\"a\"}", "\"annotations\":{\"a/b/c\":\"v\"}",
                 NULL, NULL), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.annotations");
    store_status_clear(&st);
    /* the 256 KiB budget applies to the template's annotations too */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    cJSON *j = job("big-ann", NULL, NULL, NULL, NULL);
    cJSON *tmd = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        j, "spec"), "template"), "metadata");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(tmd, "annotations"), "k", big);
    rejected(j, &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.annotations");
    assert_non_null(strstr(st.message, "Too long: must have at most 262144 bytes"));
    store_status_clear(&st);
}

static void test_template_containers(void **state)
{
    struct store_status st = { 0 };
    char f[512];

    (void)state;
    rejected(job("no-image", NULL, NULL, NULL, "[{\"name\":\"c\"}]"), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.spec.containers[0].image");
    store_status_clear(&st);
    rejected(job("no-name", NULL, NULL, NULL, "[{\"image\":\"i\"}]"), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.spec.containers[0].name");
    store_status_clear(&st);
    rejected(job("none", NULL, NULL, NULL, "[]"), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.spec.containers");
    store_status_clear(&st);
    rejected(job("dup", NULL, NULL, NULL, "[{\"name\":\"c\",\"image\":\"i\"},"
                 "{\"name\":\"c\",\"image\":\"i\"}]"), &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.spec.containers[1].name");
    store_status_clear(&st);
    cJSON *j = job("eph", NULL, NULL, NULL, NULL);
    cJSON_AddItemToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        j, "spec"), "template"), "spec"), "ephemeralContainers",
        cJSON_Parse("[{\"name\":\"dbg\",\"image\":\"busybox\"}]"));
    rejected(j, &st, f, sizeof(f));
    assert_string_equal(f, "spec.template.spec.ephemeralContainers");
    assert_non_null(strstr(st.message, "Forbidden: ephemeral containers not allowed in pod "
                                       "template"));
    store_status_clear(&st);
}

static void test_manual_selector(void **state)
{
    struct store_status st = { 0 };
    char f[512];

    (void)state;
    rejected(job("sel-miss", NULL, "\"labels\":{\"b\":\"2\",\"a\":\"1\"}",
                 "\"manualSelector\":true,\"selector\":{\"matchLabels\":{\"a\":\"9\"}}", NULL),
             &st, f, sizeof(f));
    assert_non_null(strstr(f, "spec.template.metadata.labels"));
    assert_non_null(strstr(st.message, "spec.template.metadata.labels: Invalid value: "
                                       "map[string]string{\"a\":\"1\", \"b\":\"2\"}: `selector` "
                                       "does not match template `labels`"));
    store_status_clear(&st);
    rejected(job("sel-none", NULL, "\"labels\":{\"a\":\"1\"}", "\"manualSelector\":true", NULL),
             &st, f, sizeof(f));
    assert_string_equal(f, "spec.selector");
    store_status_clear(&st);
}

/* Without manualSelector the selector and the four job labels are generated where
 * the user set none (generateSelector); a user selector or a conflicting label is
 * refused as validateGeneratedSelector refuses it. */
static void test_generated_selector(void **state)
{
    struct store_status st = { 0 };
    struct store_obj *o;
    char f[512];

    (void)state;
    rejected(job("usersel", NULL, "\"labels\":{\"a\":\"b\"}",
                 "\"selector\":{\"matchLabels\":{\"a\":\"b\"}}", NULL), &st, f, sizeof(f));
    assert_string_equal(f, "spec.selector");
    assert_non_null(strstr(st.message, "spec.selector: Invalid value: v1.LabelSelector{"
                                       "MatchLabels:map[string]string{\"a\":\"b\", "
                                       "\"batch.kubernetes.io/controller-uid\":\""));
    assert_non_null(strstr(st.message, "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
                                       "`selector` not auto-generated"));
    store_status_clear(&st);
    rejected(job("badname", NULL, "\"labels\":{\"job-name\":\"other\"}", NULL, NULL), &st, f,
             sizeof(f));
    assert_string_equal(f, "spec.template.metadata.labels[job-name]");
    assert_non_null(strstr(st.message, "Invalid value: map[string]string{"));
    assert_non_null(strstr(st.message, "\"job-name\":\"other\"}: must be 'badname'"));
    store_status_clear(&st);
    /* a user value equal to the generated one is kept, not duplicated */
    o = tl_create(S, JOBS, "default", job("samename", NULL,
                                          "\"labels\":{\"job-name\":\"samename\"}", NULL, NULL));
    const cJSON *tl = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
        cJSON_GetObjectItem(store_obj_json(o), "spec"), "template"), "metadata"), "labels");
    assert_int_equal(cJSON_GetArraySize(tl), 4);
    assert_string_equal(tl_str(tl, "controller-uid"), o->uid);
    store_obj_unref(o);
}

/* The same Jobs with valid templates are accepted (the checks above are not blanket). */
static void test_valid_templates_pass(void **state)
{
    (void)state;
    store_obj_unref(tl_create(S, JOBS, "default", job("ok1", "\"labels\":{\"team\":\"a\"}",
        "\"labels\":{\"app\":\"x\",\"ray.io/node-type\":\"worker\"},"
        "\"annotations\":{\"Example.com/Note\":\"any text: at all\"}", NULL, NULL)));
    store_obj_unref(tl_create(S, JOBS, "default", job("ok2", NULL, "\"labels\":{\"a\":\"1\"}",
        "\"manualSelector\":true,\"selector\":{\"matchExpressions\":[{\"key\":\"a\","
        "\"operator\":\"In\",\"values\":[\"1\",\"2\"]}]}", NULL)));
    store_obj_unref(tl_create(S, JOBS, "default", job("ok3", NULL, "\"labels\":{\"empty\":\"\"}",
                                                      NULL, NULL)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_template_labels_with_job_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_annotations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_containers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manual_selector, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generated_selector, setup, teardown),
        cmocka_unit_test_setup_teardown(test_valid_templates_pass, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
