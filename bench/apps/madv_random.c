/* LD_PRELOAD shim (bench experiment): after a read-only shared mmap of more than 16 MiB of a file,
   madvise(MADV_RANDOM) it, so page faults read only the faulting page instead of a readahead window. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/types.h>

static void *(*real_mmap)(void *, size_t, int, int, int, off_t);

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (!real_mmap) real_mmap = dlsym(RTLD_NEXT, "mmap");
    void *p = real_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && fd >= 0 && len > (16u << 20) && prot == PROT_READ && (flags & MAP_SHARED))
        madvise(p, len, MADV_RANDOM);
    return p;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));
