/* Recursive, error-checking and adaptive mutexes, trylock, timedlock,
 * clocklock and the static initialisers, with the POSIX result codes. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec_static = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t chk_static = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t adaptive_static = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static long counter;

static const char *name(int rc) {
    switch (rc) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    default: return strerror(rc);
    }
}

static void *from_other_thread(void *m) {
    static char out[64];
    int t = pthread_mutex_trylock(m);
    int u = pthread_mutex_unlock(m);
    snprintf(out, sizeof out, "trylock %s, unlock %s", name(t), name(u));
    if (t == 0) pthread_mutex_unlock(m);
    return out;
}

static void *timed_from_other_thread(void *m) {
    static char out[64];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 30000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    int t = pthread_mutex_timedlock(m, &ts);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 20000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    int c = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
    snprintf(out, sizeof out, "timedlock %s, clocklock %s", name(t), name(c));
    return out;
}

static void *adder(void *m) {
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(m);
        counter++;
        pthread_mutex_unlock(m);
    }
    return NULL;
}

/* Two threads add under `m`; the counter must come out exact. */
static long add_in_two_threads(pthread_mutex_t *m) {
    pthread_t th[2];
    counter = 0;
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, adder, m);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    return counter;
}

static void report(const char *what, pthread_mutex_t *m) {
    pthread_t t;
    void *res;
    pthread_create(&t, NULL, from_other_thread, m);
    pthread_join(t, &res);
    printf("%s held, other thread: %s\n", what, (char *)res);
}

int main(void) {
    pthread_mutexattr_t a;
    pthread_mutex_t rec, chk;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&chk, &a);

    int r1 = pthread_mutex_lock(&rec), r2 = pthread_mutex_lock(&rec), r3 = pthread_mutex_trylock(&rec);
    printf("recursive lock x3: %s %s %s\n", name(r1), name(r2), name(r3));
    report("recursive", &rec);
    int u1 = pthread_mutex_unlock(&rec), u2 = pthread_mutex_unlock(&rec), u3 = pthread_mutex_unlock(&rec);
    int u4 = pthread_mutex_unlock(&rec);
    printf("recursive unlock x4: %s %s %s %s\n", name(u1), name(u2), name(u3), name(u4));

    int e1 = pthread_mutex_lock(&chk), e2 = pthread_mutex_lock(&chk);
    printf("errorcheck lock: %s, relock: %s\n", name(e1), name(e2));
    printf("errorcheck trylock by owner: %s\n", name(pthread_mutex_trylock(&chk)));
    report("errorcheck", &chk);
    e1 = pthread_mutex_unlock(&chk);
    e2 = pthread_mutex_unlock(&chk);
    printf("errorcheck unlock: %s, again: %s\n", name(e1), name(e2));

    r1 = pthread_mutex_lock(&rec_static);
    r2 = pthread_mutex_lock(&rec_static);
    u1 = pthread_mutex_unlock(&rec_static);
    u2 = pthread_mutex_unlock(&rec_static);
    u3 = pthread_mutex_unlock(&rec_static);
    printf("static recursive: %s %s %s %s %s\n", name(r1), name(r2), name(u1), name(u2), name(u3));
    r1 = pthread_mutex_lock(&chk_static);
    r2 = pthread_mutex_lock(&chk_static);
    u1 = pthread_mutex_unlock(&chk_static);
    u2 = pthread_mutex_unlock(&chk_static);
    printf("static errorcheck: %s %s %s %s\n", name(r1), name(r2), name(u1), name(u2));

    pthread_mutex_lock(&plain);
    pthread_t t;
    void *res;
    pthread_create(&t, NULL, timed_from_other_thread, &plain);
    pthread_join(t, &res);
    printf("plain held, other thread: %s\n", (char *)res);
    pthread_mutex_unlock(&plain);
    pthread_create(&t, NULL, timed_from_other_thread, &plain);
    pthread_join(t, &res);
    printf("plain free, other thread: %s\n", (char *)res);
    pthread_mutex_unlock(&plain);

    printf("static plain mutex, 2 threads: counter %ld\n", add_in_two_threads(&plain));

    /* glibc's adaptive type behaves as a normal mutex. */
    pthread_mutex_t adaptive;
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&adaptive, &a);
    r1 = pthread_mutex_lock(&adaptive);
    r2 = pthread_mutex_trylock(&adaptive);
    u1 = pthread_mutex_unlock(&adaptive);
    r3 = pthread_mutex_trylock(&adaptive);
    u2 = pthread_mutex_unlock(&adaptive);
    printf("adaptive lock %s, trylock held %s, unlock %s, trylock free %s, unlock %s\n", name(r1),
           name(r2), name(u1), name(r3), name(u2));
    r1 = pthread_mutex_lock(&adaptive_static);
    r2 = pthread_mutex_trylock(&adaptive_static);
    u1 = pthread_mutex_unlock(&adaptive_static);
    printf("static adaptive lock %s, trylock held %s, unlock %s\n", name(r1), name(r2), name(u1));
    printf("adaptive mutex, 2 threads: counter %ld\n", add_in_two_threads(&adaptive));
    printf("static adaptive mutex, 2 threads: counter %ld\n", add_in_two_threads(&adaptive_static));
    printf("destroy unlocked: %s\n", name(pthread_mutex_destroy(&rec)));
    return 0;
}
