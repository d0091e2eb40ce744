// Fault 25: a signal must not enter the kernel when every waiter has
// already been woken. corral's condition variable once counted a woken
// waiter until the waiter itself ran again, so a producer that signals per
// item made a FUTEX_WAKE for each item until its consumer got the CPU back
// (tests/c/prodcons.c: 4 of 5 signals woke nobody; 55,000 futex calls
// against glibc's 14,000, twice its CPU time). Here the signaller runs
// SCHED_FIFO on the waiter's only CPU, so the woken waiter cannot run
// until the signaller sleeps: the 1,000 signals after the first must make
// no futex call (counted by futex_calls.h).
// fault-cflags: -rdynamic -ldl
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "futex_calls.h"

static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int asleep, ready;

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    asleep = 1;
    while (!ready)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        perror("sched_setaffinity");
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL); // inherits the one CPU
    // Until the waiter sleeps in the condition wait (it holds the mutex
    // while it checks; it releases it only inside the wait).
    for (;;) {
        pthread_mutex_lock(&m);
        int in_wait = asleep;
        pthread_mutex_unlock(&m);
        if (in_wait)
            break;
        usleep(1000);
    }
    usleep(20000); // past the unlock, into the futex sleep
    struct sched_param fifo = {.sched_priority = 1};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) != 0) {
        printf("skipped: SCHED_FIFO refused (needs root)\n");
        ready = 1;
        pthread_cond_signal(&c);
        pthread_join(t, NULL);
        return 0;
    }
    pthread_mutex_lock(&m);
    ready = 1;
    long before = __atomic_load_n(&futex_calls, __ATOMIC_RELAXED);
    pthread_cond_signal(&c); // wakes the waiter, which cannot run yet
    long first = __atomic_load_n(&futex_calls, __ATOMIC_RELAXED) - before;
    for (int i = 0; i < 1000; i++)
        pthread_cond_signal(&c);
    long after = __atomic_load_n(&futex_calls, __ATOMIC_RELAXED) - before - first;
    pthread_mutex_unlock(&m);
    struct sched_param other = {.sched_priority = 0};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
    pthread_join(t, NULL);
    printf("futex calls: %ld for the wake, %ld for 1000 signals after it\n", first, after);
    return after < 10 ? 0 : 1;
}
