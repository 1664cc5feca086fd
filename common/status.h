/* status.h: the status codes every bellows module returns, and the error message that goes
 * with them. Only main() turns a status into an exit code: BW_EUSAGE (bad input from the user:
 * a flag, a file, a line) exits 2, BW_ERUNTIME (I/O, divergence, out of memory) exits 1,
 * BW_EINTR (stopped by SIGINT, see outfile_interrupt_softly) exits 130 as a shell reports it.
 * A failing function writes one line, naming what was wrong, into a BwError and returns the
 * status; callers pass it up unchanged. Programmer misuse is an assert, never a status. */
#ifndef BELLOWS_STATUS_H
#define BELLOWS_STATUS_H

#include <stdarg.h>
#include <stdio.h>

enum { BW_OK = 0, BW_ERUNTIME = 1, BW_EUSAGE = 2, BW_EINTR = 130 };

typedef struct {
    char msg[512];
} BwError;

/* Formats the message into err (if err is not NULL) and returns status, so a failure site
 * reads `return bw_fail(err, BW_EUSAGE, "%s: expected ...", path);`. Messages quote what the
 * user typed, which may hold a newline or other control byte ("--policy $'a\nb'"); those become
 * '?', so the message stays one line whatever it quotes. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int
bw_fail(BwError *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        for (char *c = err->msg; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    }
    return status;
}

#endif
