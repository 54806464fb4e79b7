/*
 * kinds.h - the registration table of bin/rayop's `rayop controller KIND`: the kinds
 * under reconcilers/ (raycluster, rayjob, rayservice, raycronjob). It sits above both
 * the host library (reconcilers/host/, which takes a table and knows no kind) and the
 * kinds (which include host.h), so no include runs back up. Test builds add their own
 * kinds in their own table (tests/tools/rayop_test_main.c).
 */
#ifndef RAYOP_RECONCILERS_KINDS_H
#define RAYOP_RECONCILERS_KINDS_H

#include <stddef.h>

#include "reconcilers/host/host.h"

extern const struct host_kind reconcilers_kinds[];
extern const size_t reconcilers_nkinds;

#endif
