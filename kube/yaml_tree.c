/*
 * yaml_tree.c - turns a kubeconfig's YAML into a small tree of scalars, maps
 * and sequences, driven by libyaml's event parser.
 *
 * The kubeconfig is outside input (a user's file, a mounted secret), so the
 * builder is bounded: input size, nesting depth and node count all have hard
 * limits, and anchors/aliases are refused outright (kubeconfigs never use
 * them and aliases are how "billion laughs" documents blow up). Only the
 * first document of a stream is read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kube/internal.h"
#include "util/util.h"

#define YAML_MAX_NODES 200000

void kube__ynode_free(struct ynode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n; i++)
        kube__ynode_free(n->kids[i]);
    free(n->kids);
    free(n->value);
    free(n);
}

static int ynode_add_kid(struct ynode *parent, struct ynode *kid)
{
    if (util_array_grow(&parent->kids, sizeof(*parent->kids), parent->n, &parent->cap, 8) < 0)
        return -ENOMEM;
    parent->kids[parent->n++] = kid;
    return 0;
}

const struct ynode *kube__ynode_get(const struct ynode *n, const char *key)
{
    if (n == NULL || n->kind != YNODE_MAP)
        return NULL;
    /* Last duplicate wins, as in Go's YAML->JSON path. */
    const struct ynode *found = NULL;
    for (size_t i = 0; i + 1 < n->n; i += 2) {
        const struct ynode *k = n->kids[i];
        if (k->kind == YNODE_SCALAR && strcmp(k->value, key) == 0)
            found = n->kids[i + 1];
    }
    return found;
}

const char *kube__ynode_str(const struct ynode *n)
{
    return (n != NULL && n->kind == YNODE_SCALAR) ? n->value : NULL;
}

/*
 * Builds the tree with an explicit stack (no recursion on input depth).
 * The stack holds open containers; depth is its height.
 */
int kube__yaml_parse(const char *data, size_t len, struct ynode **out, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    struct ynode *stack[KUBE_CONFIG_MAX_DEPTH + 1];
    int depth = 0;
    size_t nodes = 0;
    struct ynode *root = NULL;
    int rc = 0, done = 0;

    *out = NULL;
    if (len > KUBE_CONFIG_MAX_BYTES) {
        kube__set_err(err, errlen, "kubeconfig is %zu bytes, over the %u byte limit", len,
                      KUBE_CONFIG_MAX_BYTES);
        return -E2BIG;
    }
    if (!yaml_parser_initialize(&parser))
        return -ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);

    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            kube__set_err(err, errlen, "yaml: %s at line %zu column %zu",
                          parser.problem ? parser.problem : "syntax error",
                          parser.problem_mark.line + 1, parser.problem_mark.column + 1);
            rc = -EINVAL;
            goto out;
        }
        struct ynode *node = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            done = 1;
            break;
        case YAML_ALIAS_EVENT:
            kube__set_err(err, errlen, "yaml: aliases are not supported (line %zu)",
                          ev.start_mark.line + 1);
            rc = -EINVAL;
            break;
        case YAML_SCALAR_EVENT:
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (++nodes > YAML_MAX_NODES) {
                kube__set_err(err, errlen, "yaml: more than %d nodes", YAML_MAX_NODES);
                rc = -E2BIG;
                break;
            }
            node = calloc(1, sizeof(*node));
            if (node == NULL) {
                rc = -ENOMEM;
                break;
            }
            if (ev.type == YAML_SCALAR_EVENT) {
                node->kind = YNODE_SCALAR;
                node->len = ev.data.scalar.length;
                node->value = malloc(node->len + 1);
                if (node->value == NULL) {
                    free(node);
                    rc = -ENOMEM;
                    break;
                }
                memcpy(node->value, ev.data.scalar.value, node->len);
                node->value[node->len] = '\0';
            } else {
                node->kind = ev.type == YAML_MAPPING_START_EVENT ? YNODE_MAP : YNODE_SEQ;
            }
            if (depth > 0) {
                rc = ynode_add_kid(stack[depth - 1], node);
                if (rc < 0) {
                    kube__ynode_free(node);
                    break;
                }
            } else if (root == NULL) {
                root = node;
            } else {
                kube__ynode_free(node); /* cannot happen: one root per document */
            }
            if (node->kind != YNODE_SCALAR) {
                if (depth == KUBE_CONFIG_MAX_DEPTH) {
                    kube__set_err(err, errlen, "yaml: nesting deeper than %d (line %zu)",
                                  KUBE_CONFIG_MAX_DEPTH, ev.start_mark.line + 1);
                    rc = -E2BIG;
                    break;
                }
                stack[depth++] = node;
            }
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc < 0)
            goto out;
    }
    if (root == NULL) {
        /* An empty file is a valid, empty kubeconfig. */
        root = calloc(1, sizeof(*root));
        if (root == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        root->kind = YNODE_MAP;
    }
    *out = root;
    root = NULL;
out:
    kube__ynode_free(root);
    yaml_parser_delete(&parser);
    return rc;
}
