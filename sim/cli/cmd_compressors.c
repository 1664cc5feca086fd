/* cmd_compressors.c: `bellows compressors`, which lists the gradient compressors with their
 * level, default, wire format, options and the paper and code each follows (compress.c). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "compress.h"

int cmd_compressors(int argc, char **argv)
{
    if (argc > 0 && strcmp(argv[0], "--help") != 0 && strcmp(argv[0], "-h") != 0) {
        fprintf(stderr, "bellows: compressors: takes no arguments\n");
        return BW_EUSAGE;
    }
    compress_print_list(stdout);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "bellows: compressors: cannot write to standard output\n");
        return BW_ERUNTIME;
    }
    return BW_OK;
}
