// `corral run --load-after-contended N`: the process runs on glibc's
// mutexes until contention loads corral's library. Mutexes that glibc
// locked before the load must behave after it, under corral's functions:
// a normal one released by corral wakes a thread asleep in glibc's wait; a
// recursive one held twice stays held until its second unlock; an
// error-checking one keeps its owner (EDEADLK, then EPERM). Prints "ok"
// and exits 0 when every step holds; FAIL and exit 1 otherwise.
#include "deferred.h"

#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER; // normal, held across the load
static pthread_mutex_t r;                              // recursive, held twice across it
static pthread_mutex_t e;                              // error-checking, held across it
static atomic_int waiter_got_m, other_got_r;

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

    contend_until_loaded();
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
