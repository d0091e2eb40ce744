// Every exec'd descendant of `corral run` loads the preload, most of them
// short-lived programs that never make a thread (a shell script's execs).
// At load they must pay for nothing they do not use: no allocation (which
// would start malloc's heap) before main. Counts allocations in a
// grandchild of corral (not the process corral started, which makes its
// stats file) by defining malloc's family here, which interposes on every
// library's calls, and fails if any ran before main.
// fault-locks: futex ticket
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static volatile long allocations;

void *malloc(size_t n)
{
    allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    allocations++;
    return __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    allocations++;
    return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void free(void *p)
{
    __libc_free(p);
}

int main(int argc, char **argv)
{
    long before_main = allocations;
    if (argc > 2 && strcmp(argv[2], "child") == 0) {
        if (before_main != 0) {
            printf("%ld allocations before main in an exec'd child (want 0)\n", before_main);
            return 1;
        }
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "-", "child", (char *)NULL);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 2;
    if (WEXITSTATUS(status) != 0)
        return WEXITSTATUS(status);
    printf("an exec'd child allocated nothing before main\n");
    return 0;
}
