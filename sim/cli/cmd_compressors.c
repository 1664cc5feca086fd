/* cmd_compressors.c: `bellows compressors`, which lists the gradient compressors with their
 * level, default, wire format, options and the paper and code each follows (compress.c). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "compress.h"

int cmd_compressors(int argc, char **argv, BwError *err)
{
    if (argc > 0 && strcmp(argv[0], "--help") != 0 && strcmp(argv[0], "-h") != 0)
        return bw_fail(err, BW_EUSAGE, "compressors: takes no arguments");
    compress_print_list(stdout);
    if (fflush(stdout) != 0 || ferror(stdout))
        return bw_fail(err, BW_ERUNTIME, "compressors: cannot write to standard output");
    return BW_OK;
}
