/* costs_validation.c: how far each built-in cost profile is validated, from
 * sim/costs/validation/summary.json (written by `bellows validate --write-summary`, embedded at
 * build time as cost_validation.h): "median error 8%, worst 19% over 24 published rows". */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "costs_impl.h"
#include "cost_validation.h" /* generated: cost_validations[] */

void costs_validation_text(const char *name, char *buf, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof cost_validations / sizeof *cost_validations; i++) {
        if (strcmp(cost_validations[i].name, "summary") != 0) continue;
        json_t *root =
            json_loadb((const char *)cost_validations[i].json, cost_validations[i].len, 0, NULL);
        json_t *p = json_object_get(json_object_get(root, "profiles"), name);
        json_t *rows = json_object_get(p, "rows"), *med = json_object_get(p, "median_error"),
               *worst = json_object_get(p, "worst_error");
        if (json_is_integer(rows) && json_is_number(med) && json_is_number(worst) &&
            json_integer_value(rows) > 0)
            snprintf(buf, n, "median error %.0f%%, worst %.0f%% over %lld published rows",
                     100 * json_number_value(med), 100 * json_number_value(worst),
                     (long long)json_integer_value(rows));
        json_decref(root);
    }
}
