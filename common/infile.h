/* infile.h: a file named on the command line to be read (--trace, --workload, --platform):
 * checked before it is opened, so that a folder, a FIFO, a device or a missing file is one line
 * naming the flag and the file, not a wait without end or a parser's puzzled message. */
#ifndef BELLOWS_INFILE_H
#define BELLOWS_INFILE_H

#include "status.h"

/* BW_OK if path is a regular file this process can read; else a usage error "FLAG PATH: why"
 * (flag may be NULL: then "PATH: why"). */
int infile_check(const char *flag, const char *path, BwError *err);

#endif
