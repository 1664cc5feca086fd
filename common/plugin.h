/* plugin.h: opening a plug-in, a shared object whose entry point returns its table of
 * operations, as the policy and schedule loaders do (policies/policy_load.c,
 * schedules/schedule_load.c). Each loader checks the table's version and contents itself. */
#ifndef BELLOWS_PLUGIN_H
#define BELLOWS_PLUGIN_H

#include <stddef.h>

#include "status.h"

/* dlopens path (RTLD_NOW | RTLD_LOCAL; a path without '/' gets "./", never the library path),
 * calls its function `entry` and sets *table to what it returned and *handle to the library.
 * Every failure is a usage error naming `flag path` (a missing or odd file, a library that will
 * not load, no `entry`, NULL returned; `header` names the file that documents the entry point),
 * with *handle NULL and nothing left open. */
int plugin_open(const char *path, const char *flag, const char *entry, const char *header,
                void **handle, const void **table, BwError *err);
/* The bytes from addr to the end of the object of a loaded shared object that holds it, by the
 * object's size in the file's symbol table (.symtab, else .dynsym); 0 when unknown (a stripped
 * file, an address in no object). A loader reads a field past an old version's table only when
 * the object is large enough to hold it. */
size_t plugin_object_room(const void *addr);
/* dlclose; NULL is nothing. */
void plugin_close(void *handle);

#endif
