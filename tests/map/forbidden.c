/* forbidden.c: compiled as a file of sim/sweep/ (bw_sweep's include path) by
 * tests/test_map_build.sh, which expects the build to fail: the driver's internal header is not
 * exported (CMakeLists.txt, bellows_library). Not part of any library. */
#include "driver_impl.h"

int map_forbidden(void);
int map_forbidden(void)
{
    return 0;
}
