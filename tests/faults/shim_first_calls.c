// A process under `corral run` other than the one corral started loads
// corral's full library at its first pthread lock call (libcorral_shim.so
// is what is preloaded). Two first calls are hard: several threads making
// theirs at the same moment (the others must wait for the load, then use
// corral's locks), and one made again by the loading thread while the load
// runs (here: this program's own malloc locks a pthread mutex, and dlopen
// allocates). Re-executes itself as a grandchild of corral; its threads
// are C11 threads (glibc's thrd_create does not go through the
// interposed pthread_create), so that the first interposed calls are
// the lock calls of eight threads released together.
// The "thread" case failed while the late-loaded full library's TLS was
// dynamic: glibc allocated a thread's block with malloc at its first
// access, inside the thread's first lock call; a malloc that locks a
// pthread mutex re-entered corral, which touched the TLS again: unbounded
// recursion, SIGSEGV (jemalloc-linked threaded programs would do this).
// Now the library's TLS is static (initial-exec, with room reserved by
// corral run through GLIBC_TUNABLES), placed for every thread at dlopen.
// The "no room" case aborted when the shim began exporting pthread_yield,
// which dlsym cannot find in glibc 2.34+.
// fault-deferred: no: its subject is the load at the first lock call.
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <threads.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <dlfcn.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static long heap_calls;

static int lock_in_malloc;

// In the "reentry" child every allocation, dlopen's included, takes a
// pthread mutex: the loading thread's re-entrant first calls.
void *malloc(size_t n)
{
    if (lock_in_malloc) {
        pthread_mutex_lock(&heap_lock);
        heap_calls++;
        pthread_mutex_unlock(&heap_lock);
    }
    return __libc_malloc(n);
}
void free(void *p) { __libc_free(p); }
void *calloc(size_t n, size_t s) { return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }

enum { THREADS = 8, ROUNDS = 20000 };
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static atomic_int ready, go;

static int worker(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ready, 1);
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return 0;
}

// Eight threads released together, each making its first lock call at
// once; 0 when the counter they share came out right.
static int run_workers(void)
{
    thrd_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (thrd_create(&t[i], worker, NULL) != thrd_success)
            return 1;
    while (atomic_load(&ready) < THREADS)
        ;
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++)
        thrd_join(t[i], NULL);
    if (counter != (long)THREADS * ROUNDS) {
        printf("FAIL: counter %ld, want %ld\n", counter, (long)THREADS * ROUNDS);
        return 1;
    }
    return 0;
}

static int loaded_full_library(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, "libcorral_preload.so") != NULL;
    if (f)
        fclose(f);
    return found;
}

static int reentry(void)
{
    lock_in_malloc = 1;
    void *p = malloc(64);
    free(p);
    if (!loaded_full_library()) {
        printf("FAIL: corral's full library never loaded\n");
        return 1;
    }
    pthread_mutex_lock(&heap_lock);
    long calls = heap_calls;
    pthread_mutex_unlock(&heap_lock);
    printf("reentry: %ld locked allocations, full library loaded\n", calls);
    return 0;
}

static void *allocating_thread(void *arg)
{
    (void)arg;
    void *p = malloc(64);
    free(p);
    return p;
}

// A thread made after the load: its first lock call (inside its first
// malloc) is also its first access to corral's TLS, which glibc allocates
// with that same malloc.
static int new_thread(void)
{
    lock_in_malloc = 1;
    free(malloc(64));
    pthread_t t;
    if (pthread_create(&t, NULL, allocating_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    printf("new thread: its first locked allocation returned\n");
    return 0;
}

static int race(void)
{
    if (loaded_full_library()) {
        printf("FAIL: the full library was loaded before any lock call\n");
        return 1;
    }
    if (run_workers())
        return 1;
    if (!loaded_full_library()) {
        printf("FAIL: corral's full library never loaded\n");
        return 1;
    }
    printf("race: counter %ld, full library loaded at the first lock\n", counter);
    return 0;
}

// A process whose environment lost corral's GLIBC_TUNABLES: the full
// library cannot be placed in static TLS, and the program must run on
// glibc's locks, correctly, rather than on dynamic TLS.
static int no_room(void)
{
    if (run_workers())
        return 1;
    if (loaded_full_library()) {
        printf("FAIL: the full library was loaded without room in static TLS\n");
        return 1;
    }
    // The shim exports the yields too: with no full library they must
    // still reach glibc's (pthread_yield is only a compat symbol there,
    // which dlsym cannot find: the shim aborted here once).
    // Found by name, as a binary linked against an older glibc finds it
    // (glibc's headers now turn the call into sched_yield): the shim's.
    int (*old_pthread_yield)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "pthread_yield");
    if (!old_pthread_yield || sched_yield() != 0 || old_pthread_yield() != 0) {
        printf("FAIL: a yield failed on glibc's functions\n");
        return 1;
    }
    printf("no room: counter %ld on glibc's locks, yields served\n", counter);
    return 0;
}

static int run_child(const char *self, const char *data, const char *mode)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (strcmp(mode, "no-room") == 0)
            unsetenv("GLIBC_TUNABLES");
        execl(self, self, data, mode, (char *)NULL);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        printf("FAIL: the %s child did not exit\n", mode);
        return 1;
    }
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[2], "race") == 0)
        return race();
    if (argc > 2 && strcmp(argv[2], "reentry") == 0)
        return reentry();
    if (argc > 2 && strcmp(argv[2], "thread") == 0)
        return new_thread();
    if (argc > 2 && strcmp(argv[2], "no-room") == 0)
        return no_room();
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    const char *data = argc > 1 ? argv[1] : "-";
    if (run_child(self, data, "race") || run_child(self, data, "reentry") ||
        run_child(self, data, "thread") || run_child(self, data, "no-room"))
        return 1;
    printf("first calls served: racing, re-entrant, new thread, no room\n");
    return 0;
}
