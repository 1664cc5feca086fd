/* plugin.c: a plug-in's shared object opened and its entry point called (plugin.h). */
#define _GNU_SOURCE /* dladdr1, the link map's load address */
#include "plugin.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* In the ELF file map[0..size): the bytes from file address off to the end of the symbol (an
 * object) that holds it, or 0; every offset read is checked against size (a file is input). */
static size_t symtab_room(const unsigned char *map, size_t size, uint64_t off)
{
    const ElfW(Ehdr) *eh = (const void *)map;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > size ||
        (size - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
        return 0;
    const ElfW(Shdr) *sh = (const void *)(map + eh->e_shoff);
    for (int pass = 0; pass < 2; pass++) /* .symtab (every object), then .dynsym */
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || sh[i].sh_offset > size ||
                sh[i].sh_size > size - sh[i].sh_offset)
                continue;
            const ElfW(Sym) *sym = (const void *)(map + sh[i].sh_offset);
            for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
                if (ELF64_ST_TYPE(sym[k].st_info) == STT_OBJECT && sym[k].st_size &&
                    off >= sym[k].st_value && off - sym[k].st_value < sym[k].st_size)
                    return (size_t)(sym[k].st_value + sym[k].st_size - off);
        }
    return 0;
}

size_t plugin_object_room(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !info.dli_fname) return 0;
    int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return 0;
    size_t room = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            room = symtab_room(map, (size_t)st.st_size, (uint64_t)((uintptr_t)addr - lm->l_addr));
            munmap(map, (size_t)st.st_size);
        }
    }
    close(fd);
    return room;
}
