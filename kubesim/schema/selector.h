/*
 * selector.h - Kubernetes label and field selectors, as the API server parses them.
 *
 * Label selectors use the full set-based grammar of apimachinery's labels.Parse:
 *   k=v  k==v  k!=v  k in (a,b)  k notin (a,b)  k  !k  and gt/lt  (k>1, k<1)
 * joined by commas. Field selectors are k=v, k==v, k!=v terms joined by commas
 * (with the apimachinery escaping of '\,' '\=' '\\').
 * Parsers are bounded (input length, term count, value length) and total:
 * every input yields a selector or -EINVAL with a message like the real server's.
 */
#ifndef RAYOP_SIM_SELECTOR_H
#define RAYOP_SIM_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

#define SEL_MAX_INPUT 8192

struct sel;  /* label selector; opaque, owned by the caller of sel_parse */
struct fsel; /* field selector; opaque */

/* Parses s (NULL or "" = match everything). 0 and *out set (caller frees with
 * sel_free), or -EINVAL with a human message in err (e.g. "unable to parse
 * requirement: ..."), or -ENOMEM. */
int sel_parse(const char *s, struct sel **out, char *err, size_t errlen);
/* Builds a selector from a metav1.LabelSelector object {matchLabels, matchExpressions}.
 * A NULL or empty object matches everything (as the API does for Job/Deployment). */
int sel_from_label_selector(const cJSON *ls, struct sel **out, char *err, size_t errlen);
/* labels: the metadata.labels object, or NULL when the object has none. */
bool sel_matches(const struct sel *s, const cJSON *labels);
bool sel_is_empty(const struct sel *s);
/* If the selector requires key=value (or key in (value)) for key, return value (borrowed), else NULL.
 * Lets a store answer "ray.io/cluster=X" from an index instead of a scan. */
const char *sel_required_value(const struct sel *s, const char *key);
void sel_free(struct sel *s);

int fsel_parse(const char *s, struct fsel **out, char *err, size_t errlen);
size_t fsel_count(const struct fsel *f);
const char *fsel_field(const struct fsel *f, size_t i); /* "metadata.name", ... */
/* Matches against obj: the field path is resolved as a dotted JSON path
 * ("status.phase", "involvedObject.name", "spec.nodeName"); a missing field is "". */
bool fsel_matches(const struct fsel *f, const cJSON *obj);
void fsel_free(struct fsel *f);

#endif
