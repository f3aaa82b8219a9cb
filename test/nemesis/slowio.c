// build: gcc -shared -fPIC -O2 -o /tmp/slowio/slowio.so test/nemesis/slowio.c -ldl (for heap-probe.ts --slow-us)
// LD_PRELOAD shim: every synced write (write, writev, pwrite, pwritev on an O_DSYNC/O_SYNC file) or fdatasync/fsync waits SLOWIO_US first (a loaded disk)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>
static void pause_io(void) { const char *s = getenv("SLOWIO_US"); usleep(s ? atoi(s) : 20000); }
static int synced(int fd) { int fl = fcntl(fd, F_GETFL); return fl >= 0 && (fl & (O_DSYNC | O_SYNC)); }
ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) { static ssize_t (*r)(int, const struct iovec *, int, off_t); if (!r) r = dlsym(RTLD_NEXT, "pwritev"); if (synced(fd)) pause_io(); return r(fd, iov, n, off); }
ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) { static ssize_t (*r)(int, const struct iovec *, int, off_t); if (!r) r = dlsym(RTLD_NEXT, "pwritev64"); if (synced(fd)) pause_io(); return r(fd, iov, n, off); }
ssize_t pwrite64(int fd, const void *b, size_t n, off_t off) { static ssize_t (*r)(int, const void *, size_t, off_t); if (!r) r = dlsym(RTLD_NEXT, "pwrite64"); if (synced(fd)) pause_io(); return r(fd, b, n, off); }
ssize_t pwrite(int fd, const void *b, size_t n, off_t off) { static ssize_t (*r)(int, const void *, size_t, off_t); if (!r) r = dlsym(RTLD_NEXT, "pwrite"); if (synced(fd)) pause_io(); return r(fd, b, n, off); }
ssize_t write(int fd, const void *b, size_t n) { static ssize_t (*r)(int, const void *, size_t); if (!r) r = dlsym(RTLD_NEXT, "write"); if (synced(fd)) pause_io(); return r(fd, b, n); }
ssize_t writev(int fd, const struct iovec *iov, int n) { static ssize_t (*r)(int, const struct iovec *, int); if (!r) r = dlsym(RTLD_NEXT, "writev"); if (synced(fd)) pause_io(); return r(fd, iov, n); }
int fdatasync(int fd) { static int (*r)(int); if (!r) r = dlsym(RTLD_NEXT, "fdatasync"); pause_io(); return r(fd); }
int fsync(int fd) { static int (*r)(int); if (!r) r = dlsym(RTLD_NEXT, "fsync"); pause_io(); return r(fd); }
