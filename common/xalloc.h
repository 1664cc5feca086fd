/* xalloc.h: memory that is there, or the process ends saying so. For the allocations that have
 * no error to return (a message's buffer inside a collective, a step's row, a plan's stages):
 * on failure "bellows: out of memory (N bytes) in WHAT" goes to stderr, the temporaries and empty
 * new folders a fatal signal would remove are removed (outfile_exit_now), and the process exits
 * BW_ERUNTIME (1). The one exception to "only main exits", as a Release build's asserts vanish
 * and an abort() looks like a crash. Setup code that can return a status keeps bw_fail. */
#ifndef BELLOWS_XALLOC_H
#define BELLOWS_XALLOC_H

#include <stddef.h>

/* what: the caller's name for the memory ("coll: a message's staging copy"). A request of 0
 * bytes asks for 1, so NULL always means failure. */
void *bw_xmalloc(size_t bytes, const char *what);
void *bw_xcalloc(size_t n, size_t size, const char *what);
void *bw_xrealloc(void *p, size_t bytes, const char *what);
/* n elements of size bytes each; a product past SIZE_MAX is out of memory too. */
void *bw_xrealloc_n(void *p, size_t n, size_t size, const char *what);
/* A copy of the string s (not NULL). */
char *bw_xstrdup(const char *s, const char *what);

/* The message, the clean-up and exit status 1; bytes SIZE_MAX reads "more than SIZE_MAX". */
_Noreturn void bw_out_of_memory(size_t bytes, const char *what);

#endif
