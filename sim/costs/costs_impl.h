/* costs_impl.h: what the files of sim/costs/ share and no other folder needs: the JSON parser
 * (costs_json.c), which costs.c calls on a file or a built-in, and the operations' names. */
#ifndef BELLOWS_COSTS_IMPL_H
#define BELLOWS_COSTS_IMPL_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "costs.h"
#include "jsonfield.h"

/* The format's version ("bellows_costs": 1). */
#define COSTS_FORMAT 1

/* Parses a profile's JSON text, text[0..len) (not NUL-terminated), into a new CostProfile. A
 * file gives path (text NULL: the file is read); a built-in gives its text. Every error is
 * BW_EUSAGE with a message starting "FLAG LABEL: " and naming the field. */
int costs_parse(const char *path, const char *text, size_t len, const char *flag, const char *label,
                CostProfile **out, BwError *err);

/* costs_busbw.c: the "busbw" key of network object net into s (at names the network). */
int costs_parse_busbw(JsonAt *at, const json_t *net, CostNetShare *s);

/* A built-in's JSON text by name: 1, or 0 when there is none of that name. */
int costs_builtin_text(const char *name, const char **text, size_t *len);

/* costs_validation.c: "median error 8%, worst 19% over 24 published rows" for the built-in
 * called name, from the embedded validation summary; "" when it has none. */
void costs_validation_text(const char *name, char *buf, size_t n);

/* costs_horovod.c: the "horovod" object o (NULL: absent) into p->horovod, at the place `at`
 * names; and its lines of `bellows costs NAME` (nothing when absent). */
int costs_parse_horovod(JsonAt *at, const json_t *o, CostProfile *p);
void costs_print_horovod(FILE *out, const CostProfile *p, const json_t *o);

/* costs.c: the "  hook ..." lines of p's compressors' hooks (none: nothing), in `bellows costs`
 * and `bellows costs NAME` alike. */
void costs_print_hooks(FILE *out, const CostProfile *p);

int costs_op_parse(const char *name);        /* -1 if unknown */
void costs_op_names(char *buf, size_t size); /* "elementwise, matmul, ..." */

/* The least share of its link a busbw point may give: below, a log is broken (and a rate of a
 * thousandth of bellows' slowest link, 1 kbps, is still one SimGrid resolves). costs_busbw.c
 * checks a profile's points against it, nccl_import.c a log's rows. */
#define BUSBW_MIN_SHARE 1e-3

#endif
