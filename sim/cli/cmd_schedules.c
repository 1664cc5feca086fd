/* cmd_schedules.c: `bellows schedules`, which lists every registered schedule with its help
 * line, source and options (schedules/schedule.c's schedule_print_list), and with
 * `--plugin PATH.so` (repeatable) also each plugin's entry in the same form. */
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "schedule.h"
#include "commands.h"

#define MAX_PLUGINS 16

int cmd_schedules(int argc, char **argv, BwError *err)
{
    if (argc == 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        printf("usage: bellows schedules [--plugin PATH.so]...\n\nLists the communication "
               "schedules a run can use with --schedule NAME[:key=value,...]:\neach one's rule, "
               "source and options with their defaults. A schedule decides, every step of a\n"
               "costed run, the order of the real model's tensors, their buckets, the partition "
               "size and the\ncredit in flight (README: Schedules). --plugin also lists a "
               "schedule loaded from a shared\nobject (--schedule PATH.so[:key=value,...]).\n");
        return BW_OK;
    }
    const char *plugins[MAX_PLUGINS];
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--plugin") != 0)
            return bw_fail(err, BW_EUSAGE,
                           "schedules: takes no arguments but --plugin PATH (got '%s')", argv[i]);
        if (i + 1 == argc) return bw_fail(err, BW_EUSAGE, "--plugin: expected a PATH.so");
        if (n == MAX_PLUGINS) return bw_fail(err, BW_EUSAGE, "--plugin: at most %d", MAX_PLUGINS);
        plugins[n++] = argv[++i];
    }
    for (int k = 0; k < n; k++) { /* every plugin loads before anything is printed */
        int rc = schedule_print_plugin(NULL, plugins[k], "--plugin", err);
        if (rc) return rc;
    }
    schedule_print_list(stdout);
    for (int k = 0; k < n; k++) {
        int rc = schedule_print_plugin(stdout, plugins[k], "--plugin", err);
        if (rc) return rc;
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        return bw_fail(err, BW_ERUNTIME, "schedules: cannot write to standard output");
    return BW_OK;
}
