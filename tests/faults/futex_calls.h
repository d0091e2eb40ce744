// For fault tests that count futex system calls: corral's library makes
// them through syscall(2), which this defines (exported with -rdynamic, it
// comes first in symbol lookup, corral's library included) and counts in
// `futex_calls` before passing the call on. Build with -rdynamic -ldl.
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/syscall.h>

static long futex_calls;

long syscall(long number, ...) {
    static long (*next)(long, ...);
    if (!next)
        next = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_futex)
        __atomic_add_fetch(&futex_calls, 1, __ATOMIC_RELAXED);
    return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
