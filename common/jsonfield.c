/* jsonfield.c: see jsonfield.h. */
#include "jsonfield.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int json_at_fail(const JsonAt *at, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bw_fail(at->err, BW_EUSAGE, "%s%s", at->where, msg);
}

int json_at_str(const JsonAt *at, const json_t *o, const char *key, int required, char *out,
                size_t n)
{
    json_t *v = json_object_get(o, key);
    if (!v && !required) return BW_OK;
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= n ||
        strlen(json_string_value(v)) != json_string_length(v))
        return json_at_fail(at, "\"%s\" must be a string of 1 to %zu characters", key, n - 1);
    /* a name is printed in headers and tables: a newline or an escape sequence in it would
     * split or rewrite the line it is printed on */
    for (const char *ch = json_string_value(v); *ch; ch++)
        if ((unsigned char)*ch < 0x20 || *ch == 0x7f)
            return json_at_fail(at,
                                "\"%s\": a control character (byte 0x%02x at offset %ld); expected "
                                "printable text",
                                key, (unsigned char)*ch, (long)(ch - json_string_value(v)));
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return BW_OK;
}
