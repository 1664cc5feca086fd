/* xalloc.c: allocations that succeed or end the process with one message (xalloc.h). */
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outfile.h"
#include "status.h"

void bw_out_of_memory(size_t bytes, const char *what)
{
    char msg[512]; /* on the stack: the heap is what failed */
    int n =
        bytes == SIZE_MAX
            ? snprintf(msg, sizeof msg, "bellows: out of memory (more than %zu bytes) in %s\n",
                       bytes, what)
            : snprintf(msg, sizeof msg, "bellows: out of memory (%zu bytes) in %s\n", bytes, what);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof msg) {
        n = (int)sizeof msg - 1;
        msg[n - 1] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
    (void)w;
    outfile_exit_now(BW_ERUNTIME);
}

void *bw_xmalloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) bw_out_of_memory(bytes, what);
    return p;
}

void *bw_xcalloc(size_t n, size_t size, const char *what)
{
    if (size && n > SIZE_MAX / size) bw_out_of_memory(SIZE_MAX, what);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) bw_out_of_memory(n * size, what);
    return p;
}

void *bw_xrealloc(void *p, size_t bytes, const char *what)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) bw_out_of_memory(bytes, what);
    return q;
}

void *bw_xrealloc_n(void *p, size_t n, size_t size, const char *what)
{
    if (size && n > SIZE_MAX / size) bw_out_of_memory(SIZE_MAX, what);
    return bw_xrealloc(p, n * size, what);
}

char *bw_xstrdup(const char *s, const char *what)
{
    const size_t n = strlen(s) + 1;
    return memcpy(bw_xmalloc(n, what), s, n);
}
