/*
 * quantity.h - Kubernetes resource.Quantity parsing, shared by kubesim and the operator.
 */
#ifndef RAYOP_KOBJ_QUANTITY_H
#define RAYOP_KOBJ_QUANTITY_H

#include <stdint.h>

/* Parses a resource.Quantity ("500m", "1.5", "2Gi", "1e3", "10M") into thousandths
 * of its unit (so "500m" -> 500, "2Ki" -> 2048000), rounded up as
 * Quantity.MilliValue rounds. Bounded and total: 0, or -EINVAL for anything that is
 * not a quantity, -ERANGE past ~9.2e15 units. */
int kobj_quantity_parse(const char *s, int64_t *milli);

#endif
