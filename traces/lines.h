/* lines.h: the lines of a text file, plain or gzip, for the trace reader. A gzip file (it starts
 * with the gzip magic) is inflated member after member; anything after the last member that is
 * not another member, a stream cut short and corrupt data are errors, as are NUL bytes in a
 * line: a reader sees the file's text exactly or a reason why not. Internal to traces/. */
#ifndef BELLOWS_LINES_H
#define BELLOWS_LINES_H

#include <stddef.h>

typedef struct LineSrc LineSrc;

/* Opens path (a regular file: check it first, infile.h). NULL with why (strerror) on failure. */
LineSrc *lines_open(const char *path, char *why, size_t why_len);
void lines_close(LineSrc *s); /* NULL is a no-op */

/* The next line, without its newline, NUL-terminated, valid until the next call: returns 1
 * with *line, *len and *complete (whether it ended with a newline: only the file's last line
 * may not); 0 at the end of the file; -1 with why on an error: "truncated: ...", "corrupt
 * gzip data: ...", "data after the end of the gzip stream", "a NUL byte at column C", a read
 * error, or out of memory. */
int lines_next(LineSrc *s, char **line, size_t *len, int *complete, char *why, size_t why_len);

/* Whether the file is gzip. */
int lines_is_gzip(const LineSrc *s);

#endif
