/*
 * yaml_fixture.h - loads a YAML file (the KubeRay CRD manifests) into cJSON for the
 * registry/present tests, with libyaml's document API. Test-only and header-only:
 * plain scalars true/false/null and numbers become JSON types, quoted ones stay strings.
 * Nesting is bounded so a broken fixture fails the test instead of the stack.
 */
#ifndef RAYOP_TESTS_YAML_FIXTURE_H
#define RAYOP_TESTS_YAML_FIXTURE_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static cJSON *yaml_fixture_node(yaml_document_t *doc, yaml_node_t *n, int depth)
{
    cJSON *out = NULL;

    if (!n || depth > 128)
        return NULL;
    if (n->type == YAML_SCALAR_NODE) {
        const char *s = (const char *)n->data.scalar.value;
        char *end;
        double d;
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
            return cJSON_CreateString(s);
        if (!strcmp(s, "true"))
            return cJSON_CreateTrue();
        if (!strcmp(s, "false"))
            return cJSON_CreateFalse();
        if (!strcmp(s, "null") || !strcmp(s, "~") || !*s)
            return cJSON_CreateNull();
        d = strtod(s, &end);
        if (*s && !*end && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
            return cJSON_CreateNumber(d);
        return cJSON_CreateString(s);
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        out = cJSON_CreateArray();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             out && it < n->data.sequence.items.top; it++) {
            cJSON *c = yaml_fixture_node(doc, yaml_document_get_node(doc, *it), depth + 1);
            if (!c) {
                cJSON_Delete(out);
                return NULL;
            }
            cJSON_AddItemToArray(out, c);
        }
        return out;
    }
    if (n->type == YAML_MAPPING_NODE) {
        out = cJSON_CreateObject();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
             out && p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            cJSON *v = yaml_fixture_node(doc, yaml_document_get_node(doc, p->value), depth + 1);
            if (!k || k->type != YAML_SCALAR_NODE || !v) {
                cJSON_Delete(v);
                cJSON_Delete(out);
                return NULL;
            }
            cJSON_AddItemToObject(out, (const char *)k->data.scalar.value, v);
        }
        return out;
    }
    return NULL;
}

/* The first document of path as cJSON (caller deletes), or NULL. */
static cJSON *yaml_fixture_load(const char *path)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    cJSON *out = NULL;
    FILE *f = fopen(path, "rb");

    if (!f)
        return NULL;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return NULL;
    }
    yaml_parser_set_input_file(&parser, f);
    if (yaml_parser_load(&parser, &doc)) {
        out = yaml_fixture_node(&doc, yaml_document_get_root_node(&doc), 0);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return out;
}

#endif
