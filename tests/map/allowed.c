/* allowed.c: the control for forbidden.c: the same place (bw_sweep's include path) reaches the
 * public headers of the folders sim/sweep/ uses, so the build succeeds. */
#include "driver.h"
#include "run_args.h"
#include "sweep.h"

int map_allowed(void);
int map_allowed(void)
{
    return 0;
}
