/*
 * keys.c - the growing lists of object keys the cluster thread keeps (Pods
 * waiting for the scheduler, unschedulable Pods, Services whose endpoints are
 * dirty). A leaf: pods.c and endpoints.c both append through it, so neither
 * calls into the other for it.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kubesim/cluster/internal.h"

bool cluster__keys_push(char ***list, size_t *n, size_t *cap, const char *key)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        char **nl = realloc(*list, ncap * sizeof(*nl));
        if (!nl)
            return false;
        *list = nl;
        *cap = ncap;
    }
    if (!((*list)[*n] = strdup(key)))
        return false;
    (*n)++;
    return true;
}
