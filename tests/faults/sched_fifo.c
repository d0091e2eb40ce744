// Fault 4: real-time (SCHED_FIFO) threads of different priorities sharing
// a mutex on one core must finish as without corral. A higher-priority
// waiter that spins on the core of the holder it preempted never lets the
// holder run again: with corral's spinning locks this froze for good (over
// 20 minutes at 100% CPU). Skips (exit 0, says so) where real-time
// priority is not allowed.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#ifndef ITERS
#define ITERS 200000 // -DITERS=N for a timed run (see the issue-15 note)
#endif

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&m);
        for (int k = 0; k < 50; k++)
            counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(void) {
    alarm(20); // plain: well under a second
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_attr_setaffinity_np(&a, sizeof one, &one);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        // Later threads preempt earlier ones, holders included.
        struct sched_param p = {.sched_priority = 1 + i};
        pthread_attr_setschedparam(&a, &p);
        int rc = pthread_create(&t[i], &a, work, NULL);
        if (rc == EPERM) {
            if (i == 0) {
                printf("skipped: SCHED_FIFO not permitted\n");
                return 0;
            }
            fprintf(stderr, "thread %d: EPERM after %d started\n", i, i);
            return 1;
        }
        if (rc) {
            fprintf(stderr, "pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int ok = counter == (long)THREADS * ITERS * 50;
    printf("real-time threads %d finished, count %s\n", THREADS, ok ? "right" : "wrong");
    return ok ? 0 : 1;
}
