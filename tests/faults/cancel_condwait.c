// Fault 2: pthread_cancel of a thread blocked in pthread_cond_wait or
// pthread_cond_timedwait must cancel it (both are POSIX cancellation
// points), run its cleanup handler with the mutex re-acquired, and let
// pthread_join return PTHREAD_CANCELED. corral's futex wait once was not a
// cancellation point: the join hung and no handler ran. Then the same on a
// process-shared condition variable, glibc's under every lock (a spinning
// lock's private mutex is stood in for inside glibc's wait).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t private_c = PTHREAD_COND_INITIALIZER, shared_c;
static pthread_cond_t *c = &private_c;
static atomic_int waiting, cleanups, held_in_cleanup;

static void cleanup(void *arg) {
    (void)arg;
    // POSIX: the mutex is re-acquired before the handler runs.
    if (pthread_mutex_trylock(&m) == 0) {
        pthread_mutex_unlock(&m); // not held: a recursive-free mutex was free
    } else {
        atomic_fetch_add(&held_in_cleanup, 1);
    }
    atomic_fetch_add(&cleanups, 1);
    pthread_mutex_unlock(&m);
}

static void *waiter(void *timed) {
    pthread_mutex_lock(&m);
    pthread_cleanup_push(cleanup, NULL);
    atomic_fetch_add(&waiting, 1);
    for (;;) {
        if (timed) {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_sec += 60;
            pthread_cond_timedwait(c, &m, &t);
        } else {
            pthread_cond_wait(c, &m);
        }
    }
    pthread_cleanup_pop(1);
    return NULL;
}

// Cancels a thread in each kind of wait on `c`; 0 where both went as POSIX says.
static int round_on(pthread_cond_t *cond) {
    c = cond;
    atomic_store(&waiting, 0);
    atomic_store(&cleanups, 0);
    atomic_store(&held_in_cleanup, 0);
    pthread_t t[2];
    pthread_create(&t[0], NULL, waiter, NULL);
    pthread_create(&t[1], NULL, waiter, (void *)1);
    while (atomic_load(&waiting) < 2)
        usleep(1000);
    usleep(20000); // both are inside the wait, not just before it
    int cancelled = 0;
    for (int i = 0; i < 2; i++) {
        pthread_cancel(t[i]);
        void *ret;
        pthread_join(t[i], &ret);
        cancelled += ret == PTHREAD_CANCELED;
    }
    // The mutex must be free again (each handler released it).
    int free_after = pthread_mutex_trylock(&m) == 0;
    if (free_after)
        pthread_mutex_unlock(&m);
    printf("%s: cancelled %d cleanups %d held-in-cleanup %d free %d\n",
           cond == &private_c ? "private" : "shared", cancelled, atomic_load(&cleanups),
           atomic_load(&held_in_cleanup), free_after);
    return cancelled == 2 && atomic_load(&cleanups) == 2 &&
                   atomic_load(&held_in_cleanup) == 2 && free_after
               ? 0
               : 1;
}

int main(void) {
    alarm(10); // a hang is a failure, not a stuck suite
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&shared_c, &a);
    int bad = round_on(&private_c);
    bad |= round_on(&shared_c);
    return bad;
}
