/* plugin.c: a plug-in's shared object opened and its entry point called (plugin.h). */
#include "plugin.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "spec.h"

int plugin_open(const char *path, const char *flag, const char *entry, const char *header,
                void **handle, const void **table, BwError *err)
{
    *handle = NULL;
    *table = NULL;
    struct stat st;
    if (stat(path, &st) != 0) return bw_fail(err, BW_EUSAGE, "%s %s: no such file", flag, path);
    if (!S_ISREG(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "%s %s: not a regular file", flag, path);
    char local[SPEC_MAX_TEXT + 2];
    snprintf(local, sizeof local, "%s%s", strchr(path, '/') ? "" : "./", path);
    dlerror();
    void *lib = dlopen(local, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return bw_fail(err, BW_EUSAGE, "%s %s: cannot load it as a shared object (%s)", flag, path,
                       why ? why : "dlopen failed");
    }
    const void *(*fn)(void);
    void *sym = dlsym(lib, entry);
    memcpy(&fn, &sym, sizeof fn); /* ISO C has no object-to-function pointer cast */
    const void *raw = sym ? fn() : NULL;
    if (!raw) {
        dlclose(lib);
        if (!sym)
            return bw_fail(err, BW_EUSAGE, "%s %s: no entry point %s() (define it, see %s)", flag,
                           path, entry, header);
        return bw_fail(err, BW_EUSAGE, "%s %s: %s() returned NULL", flag, path, entry);
    }
    *handle = lib;
    *table = raw;
    return BW_OK;
}

void plugin_close(void *handle)
{
    if (handle) dlclose(handle);
}
