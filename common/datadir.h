/* datadir.h: where bellows finds the files it reads at run time besides its input (the gnuplot
 * scripts, the Python policy module): beside its own executable, so no path is compiled in and
 * an installed tree may be moved. An installed bellows has them in PREFIX/share/bellows
 * (BELLOWS_DATADIR_REL from the executable's folder, "../share/bellows"); a build folder in
 * build/share/bellows, which CMake fills with links into the source tree. */
#ifndef BELLOWS_DATADIR_H
#define BELLOWS_DATADIR_H

#include <stddef.h>

/* Writes DATADIR/sub into out (n bytes) for the first data folder that has sub, and returns 1;
 * 0 (out "") when neither has it or the executable's path is unknown. */
int datadir_find(const char *sub, char *out, size_t n);

#endif
