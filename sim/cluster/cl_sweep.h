/* cl_sweep.h: the axes of bellows cluster --set (cl_sweep.c): keys of a cluster file, each
 * with a list of values; the points are their cross product. */
#ifndef BELLOWS_CL_SWEEP_H
#define BELLOWS_CL_SWEEP_H

#include "cl_impl.h"
#include "spec.h"

#define CL_MAX_AXES   8
#define CL_MAX_VALUES 16

typedef struct {
    char key[128]; /* KEY or JOB.KEY */
    char values[CL_MAX_VALUES][SPEC_MAX_TEXT];
    int n;
} ClAxis;

/* Whether a command-line argument is one more KEY=VALUES of the --set before it (several may
 * follow one --set: "--set a=1,2 b.policy=x,y"). */
int cl_set_item(const char *arg);

/* "KEY=V1,V2 JOB.KEY=V1,V2" into axes[CL_MAX_AXES]. */
int cl_axes_parse(const char *text, ClAxis *axes, int *n, BwError *err);
/* Every point gets a folder of its own that a file system takes: no two values of an axis that
 * the folder's characters make the same, no name over 255 bytes. A usage error says which. */
int cl_axes_check(const ClAxis *axes, int n, BwError *err);
long cl_axes_points(const ClAxis *axes, int n);
/* Point p's value index on each axis (the first axis slowest). */
void cl_axes_point(const ClAxis *axes, int n, long p, int *value);
/* "oversubscription=2_b.policy=sync": the point's folder under DIR/points/. */
void cl_axes_folder(const ClAxis *axes, int n, const int *value, char *buf, size_t size);
/* The point's values set in the file's tree. */
int cl_axes_apply(json_t *root, const char *path, const ClAxis *axes, int n, const int *value,
                  BwError *err);

#endif
