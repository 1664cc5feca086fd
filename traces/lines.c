/* lines.c: a text file's lines, plain or gzip (see lines.h). zlib's gzread would do the reading,
 * but it skips what follows the last gzip member without a word and hands NUL bytes through;
 * here the inflating is ours (inflate with the gzip wrapper, reset at each member), so both are
 * seen. Bytes are kept in one growing buffer from which whole lines are cut. */
#include "lines.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define CHUNK (1 << 16)

struct LineSrc {
    int fd;
    int started, gzip, in_member, ended; /* ended: the text is done */
    z_stream z;
    unsigned char in[CHUNK];
    size_t in_len; /* bytes of in[] not yet consumed, from z.next_in */
    char *buf;     /* decoded text: [start, len) not yet handed out */
    size_t start, len, cap;
    int eof; /* read() returned 0 */
};

LineSrc *lines_open(const char *path, char *why, size_t why_len)
{
    LineSrc *s = bw_xcalloc(1, sizeof *s, "lines.c: s");
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    s->fd = open(path, O_RDONLY);
    if (s->fd < 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        free(s);
        return NULL;
    }
    return s;
}

void lines_close(LineSrc *s)
{
    if (!s) return;
    if (s->gzip) inflateEnd(&s->z);
    close(s->fd);
    free(s->buf);
    free(s);
}

int lines_is_gzip(const LineSrc *s)
{
    return s->gzip;
}

/* More raw bytes into in[] (after what is left); 0 at the end of the file, -1 on an error. */
static int fill(LineSrc *s, char *why, size_t why_len)
{
    if (s->eof) return 0;
    if (s->in_len && s->z.next_in != s->in) memmove(s->in, s->z.next_in, s->in_len);
    s->z.next_in = s->in;
    ssize_t got;
    do got = read(s->fd, s->in + s->in_len, CHUNK - s->in_len);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        snprintf(why, why_len, "cannot read it: %s", strerror(errno));
        return -1;
    }
    if (got == 0) s->eof = 1;
    s->in_len += (size_t)got;
    s->z.avail_in = (uInt)s->in_len;
    return got > 0;
}

/* Room for at least CHUNK more bytes of text at buf + len. */
static int room(LineSrc *s, char *why, size_t why_len)
{
    if (s->start > 0) { /* drop what was handed out */
        memmove(s->buf, s->buf + s->start, s->len - s->start);
        s->len -= s->start;
        s->start = 0;
    }
    if (s->cap - s->len > CHUNK) return 0;
    size_t grown = s->cap ? 2 * s->cap : 4 * CHUNK;
    char *p = bw_xrealloc(s->buf, grown, "lines.c: p");
    if (!p) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    s->buf = p;
    s->cap = grown;
    return 0;
}

/* The first bytes decide: the gzip magic, or plain text. */
static int start(LineSrc *s, char *why, size_t why_len)
{
    while (s->in_len < 2 && !s->eof)
        if (fill(s, why, why_len) < 0) return -1;
    s->gzip = s->in_len >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b;
    if (s->gzip && inflateInit2(&s->z, 15 + 16) != Z_OK) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    s->in_member = s->gzip;
    s->z.next_in = s->in;
    s->z.avail_in = (uInt)s->in_len;
    return 0;
}

/* Decoded bytes appended to buf; 0 at the end of the text, 1 when some came, -1 on an error. */
static int decode(LineSrc *s, char *why, size_t why_len)
{
    if (room(s, why, why_len)) return -1;
    if (!s->gzip) { /* plain: the raw bytes are the text */
        if (s->in_len == 0 && fill(s, why, why_len) <= 0) return s->eof ? 0 : -1;
        memcpy(s->buf + s->len, s->z.next_in, s->in_len);
        s->len += s->in_len;
        s->in_len = 0;
        s->z.next_in = s->in;
        return 1;
    }
    for (;;) {
        if (!s->in_member) { /* between members: another one, or the end */
            if (s->in_len < 2 && !s->eof && fill(s, why, why_len) < 0) return -1;
            if (s->in_len == 0) return 0;
            if (s->in_len < 2 || s->z.next_in[0] != 0x1f || s->z.next_in[1] != 0x8b) {
                snprintf(why, why_len, "data after the end of the gzip stream");
                return -1;
            }
            inflateReset(&s->z);
            s->in_member = 1;
        }
        if (s->in_len == 0) {
            int got = fill(s, why, why_len);
            if (got < 0) return -1;
            if (got == 0) {
                snprintf(why, why_len, "truncated: the gzip stream ends early");
                return -1;
            }
        }
        s->z.next_out = (unsigned char *)s->buf + s->len;
        s->z.avail_out = CHUNK;
        int zr = inflate(&s->z, Z_NO_FLUSH);
        s->in_len = s->z.avail_in;
        size_t out = CHUNK - s->z.avail_out;
        s->len += out;
        if (zr == Z_STREAM_END)
            s->in_member = 0;
        else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            snprintf(why, why_len, "corrupt gzip data: %s", s->z.msg ? s->z.msg : "bad stream");
            return -1;
        }
        if (out > 0) return 1;
    }
}

int lines_next(LineSrc *s, char **line, size_t *len, int *complete, char *why, size_t why_len)
{
    if (!s->started) {
        s->started = 1;
        if (start(s, why, why_len)) return -1;
    }
    size_t scanned = 0; /* of [start, len): no newline there yet */
    for (;;) {
        char *from = s->buf ? s->buf + s->start : NULL;
        size_t have = s->len - s->start;
        char *nl = from ? memchr(from + scanned, '\n', have - scanned) : NULL;
        if (nl || (s->ended && have > 0)) {
            size_t n = nl ? (size_t)(nl - from) : have;
            char *nul = memchr(from, '\0', n);
            if (nul) {
                snprintf(why, why_len, "a NUL byte at column %zu", (size_t)(nul - from) + 1);
                return -1;
            }
            /* the newline's place takes the terminator; a last line without one needs a byte */
            if (!nl && room(s, why, why_len)) return -1;
            from = s->buf + s->start;
            from[n] = '\0';
            *line = from;
            *len = n;
            *complete = nl != NULL;
            s->start += n + (nl ? 1 : 0);
            if (!nl) s->start = s->len;
            return 1;
        }
        if (s->ended) return 0;
        scanned = have;
        int got = decode(s, why, why_len);
        if (got < 0) return -1;
        if (got == 0) s->ended = 1;
    }
}
