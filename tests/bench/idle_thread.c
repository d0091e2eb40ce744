/* What one idle thread costs a short program, without corral: an
 * LD_PRELOAD library that, right after the program's AT-th pthread_create
 * (default 1), makes one more thread that blocks on a condition variable
 * until the process exits (IDLE_THREAD_EXITS=1: one that returns at once).
 * corral's monitor is such a thread, made at the program's first create.
 *
 *   cc -O2 -shared -fPIC -o idle_thread.so tests/bench/idle_thread.c -ldl
 *   G='git grep --threads=2 -c -e mutex HEAD'   # in a repo of ~2,000 files
 *   tests/bench/ab.py-style interleaved runs of: $G;
 *   LD_PRELOAD=./idle_thread.so $G;  LD_PRELOAD=./idle_thread.so AT=2 $G;
 *   LD_PRELOAD=./idle_thread.so IDLE_THREAD_EXITS=1 $G
 *
 * On the 2-CPU VM (kernel 6.18; git grep --threads=2 about 22 ms; runs of
 * 300-400 interleaved rounds, each case against the same library making no
 * thread): one extra thread cost 4-11% of the wall time whether it blocked
 * or returned at once and whether it came after the first create or the
 * last; which of these matters could not be told apart from run to run
 * (the same case read 0.89x in one run and 0.93x in another). A thread that
 * returned at once after the last create cost least (0.96-1.00x). Whether
 * a many-core machine shows it is not known.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t idle_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int creates;

static void *idle(void *arg) {
    if (getenv("IDLE_THREAD_EXITS"))
        return arg;
    pthread_mutex_lock(&idle_mutex);
    for (;;)
        pthread_cond_wait(&idle_cond, &idle_mutex);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    int rc = real(t, attr, start, arg);
    const char *at = getenv("AT");
    if (++creates == (at ? atoi(at) : 1)) {
        pthread_t extra;
        if (real(&extra, NULL, idle, NULL) == 0)
            pthread_detach(extra);
    }
    return rc;
}
