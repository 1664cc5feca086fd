/* compat.h: which feature values do not go together (compat.def, issue 47), checked from the
 * flags a run was given: each refusal's message is the table's, naming both flags. */
#ifndef BELLOWS_COMPAT_H
#define BELLOWS_COMPAT_H

#include <stdio.h>

#include "status.h"

typedef enum {
#define COMPAT_FEATURE(ID, flag, what) COMPAT_##ID,
#include "compat.def"
#undef COMPAT_FEATURE
    COMPAT_N_FEATURES
} CompatFeature;

/* What a run gives each feature: value[f] the value matched against the table (NULL: not
 * given), shown[f] how the message names it after the flag (NULL: the value), flag[f] the flag
 * the message names when the command calls it otherwise (NULL: the table's). A feature whose
 * value costs something to find (a policy's kind: the policy is created) is asked of lazy only
 * (those of lazy_features) only for a line whose other sides match; lazy may be NULL. */
typedef struct CompatScene {
    const char *value[COMPAT_N_FEATURES];
    const char *shown[COMPAT_N_FEATURES];
    const char *flag[COMPAT_N_FEATURES]; /* NULL: the feature's own (compare's --policies) */
    int (*lazy)(struct CompatScene *s, CompatFeature f, BwError *err); /* fills value[f] */
    unsigned lazy_features; /* the features lazy fills: bit 1 << f */
    void *ctx;
} CompatScene;

/* The first line of compat.def that s matches: BW_EUSAGE with "--A a with --B b: why" ("--A a
 * with --B b (--C c): why" for a COMPAT_WHEN line), else BW_OK (or lazy's own failure). */
int compat_check(CompatScene *s, BwError *err);

/* The features and the pairs as tab-separated lines ("compat-feature\tflag\twhat", then
 * "compat\tflag A\tvalues A\tflag B\tvalues B\tflag C\tvalues C\twhy", C empty for a plain
 * pair), for scripts/gen_reference.sh. */
void compat_print_tsv(FILE *out);

/* The table itself, for tests/test_compat.c: line i's features, values and reason; the count;
 * with its condition (c COMPAT_N_FEATURES and vc NULL for a plain pair). */
int compat_lines(void);
void compat_line(int i, CompatFeature *a, const char **va, CompatFeature *b, const char **vb,
                 const char **why);
void compat_line_when(int i, CompatFeature *a, const char **va, CompatFeature *b, const char **vb,
                      CompatFeature *c, const char **vc, const char **why);
const char *compat_flag(CompatFeature f);
/* Whether value v matches a line's values ("*", "a|b", "!a"); NULL never does. */
int compat_match(const char *values, const char *v);

#endif
