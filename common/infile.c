/* infile.c: input files checked before they are opened (see infile.h). */
#include "infile.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int infile_check(const char *flag, const char *path, BwError *err)
{
    const char *sp = flag ? " " : "";
    flag = flag ? flag : "";
    struct stat st;
    if (!path[0]) return bw_fail(err, BW_EUSAGE, "%s%s'': expected a file name", flag, sp);
    if (stat(path, &st) != 0)
        return bw_fail(err, BW_EUSAGE, "%s%s%s: %s", flag, sp, path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "%s%s%s: is a folder, expected a file", flag, sp, path);
    if (!S_ISREG(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "%s%s%s: not a regular file (a %s), expected a file", flag,
                       sp, path,
                       S_ISFIFO(st.st_mode)                         ? "FIFO, which may never end"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device"
                       : S_ISSOCK(st.st_mode)                       ? "socket"
                                                                    : "special file");
    if (access(path, R_OK) != 0)
        return bw_fail(err, BW_EUSAGE, "%s%s%s: %s", flag, sp, path, strerror(errno));
    return BW_OK;
}
