/* plugin.h: opening a plug-in, a shared object whose entry point returns its table of
 * operations, as the policy and schedule loaders do (policies/policy_load.c,
 * schedules/schedule_load.c). Each loader checks the table's version and contents itself. */
#ifndef BELLOWS_PLUGIN_H
#define BELLOWS_PLUGIN_H

#include "status.h"

/* dlopens path (RTLD_NOW | RTLD_LOCAL; a path without '/' gets "./", never the library path),
 * calls its function `entry` and sets *table to what it returned and *handle to the library.
 * Every failure is a usage error naming `flag path` (a missing or odd file, a library that will
 * not load, no `entry`, NULL returned; `header` names the file that documents the entry point),
 * with *handle NULL and nothing left open. */
int plugin_open(const char *path, const char *flag, const char *entry, const char *header,
                void **handle, const void **table, BwError *err);
/* dlclose; NULL is nothing. */
void plugin_close(void *handle);

#endif
