// `corral run --load-after-contended N`: the process runs on glibc's
// mutexes until contention loads corral's library. Mutexes that glibc
// locked before the load must behave after it, under corral's functions:
// a normal one released by corral wakes a thread asleep in glibc's wait; a
// recursive one held twice stays held until its second unlock; an
// error-checking one keeps its owner (EDEADLK, then EPERM). Prints "ok"
// and exits 0 when every step holds; FAIL and exit 1 otherwise.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER; // normal, held across the load
static pthread_mutex_t r;                              // recursive, held twice across it
static pthread_mutex_t e;                              // error-checking, held across it
static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER; // contended until corral loads
static atomic_int waiter_got_m, other_got_r;

static int find_corral(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (strstr(info->dlpi_name, "libcorral_preload"))
        *(int *)found = 1;
    return 0;
}

static int corral_loaded(void) {
    int found = 0;
    dl_iterate_phdr(find_corral, &found);
    return found;
}

// A thread that takes `mutex`, says so in `got`, and lets it go.
struct taker {
    pthread_mutex_t *mutex;
    atomic_int *got;
};

static void *take(void *arg) {
    struct taker *t = arg;
    pthread_mutex_lock(t->mutex);
    *t->got = 1;
    pthread_mutex_unlock(t->mutex);
    return 0;
}

// Contends on `hot` until corral's library is loaded (looked for every 256
// rounds: dl_iterate_phdr takes the loader's lock), or gives up after
// 50 million rounds (seconds), when the load check above then fails.
static void *hammer(void *arg) {
    for (long i = 0; i < 50000000 && (i % 256 != 0 || !corral_loaded()); i++) {
        pthread_mutex_lock(&hot);
        for (volatile int k = 0; k < 50; k++)
            ;
        pthread_mutex_unlock(&hot);
    }
    return arg;
}

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: %s\n", what);                                                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&r, &attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&e, &attr);

    CHECK(!corral_loaded(), "corral's library is not loaded before any contention");
    CHECK(pthread_mutex_lock(&m) == 0, "glibc locks m");
    CHECK(pthread_mutex_lock(&r) == 0 && pthread_mutex_lock(&r) == 0, "glibc locks r twice");
    CHECK(pthread_mutex_lock(&e) == 0, "glibc locks e");
    pthread_t w;
    struct taker waiter = {&m, &waiter_got_m};
    pthread_create(&w, 0, take, &waiter);
    usleep(50000); // the waiter goes to sleep on m in glibc's wait
    CHECK(!corral_loaded(), "still glibc's locks before contention");

    pthread_t h[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&h[i], 0, hammer, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(h[i], 0);
    CHECK(corral_loaded(), "contention loaded corral's library");

    CHECK(pthread_mutex_lock(&e) == EDEADLK, "corral: relocking e is EDEADLK");
    CHECK(pthread_mutex_unlock(&e) == 0, "corral releases e, which glibc locked");
    CHECK(pthread_mutex_unlock(&e) == EPERM, "corral: unlocking e again is EPERM");

    CHECK(pthread_mutex_unlock(&m) == 0, "corral releases m, which glibc locked");
    pthread_join(w, 0);
    CHECK(waiter_got_m, "the thread asleep in glibc's wait got m");

    pthread_t o;
    struct taker other = {&r, &other_got_r};
    pthread_create(&o, 0, take, &other);
    usleep(20000);
    CHECK(!other_got_r, "r stays held while glibc's two locks stand");
    CHECK(pthread_mutex_unlock(&r) == 0, "corral's first unlock of r");
    usleep(20000);
    CHECK(!other_got_r, "r stays held after one of two unlocks");
    CHECK(pthread_mutex_unlock(&r) == 0, "corral's second unlock of r");
    pthread_join(o, 0);
    CHECK(other_got_r, "another thread gets r after both unlocks");
    printf("ok\n");
    return 0;
}
