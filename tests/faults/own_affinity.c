// Fault 7: a program's own CPU pinning is respected. A thread that pins
// itself with pthread_setaffinity_np and then contends on a mutex must
// always find its mask within what it asked for: corral may narrow it,
// never widen or replace it. corral once replaced it with its own core set.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;
static atomic_int stop, violations;
static int pin_cpu;

static int mask_within_pin(void) {
    cpu_set_t now;
    if (pthread_getaffinity_np(pthread_self(), sizeof now, &now))
        return 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &now) && c != pin_cpu)
            return 0;
    return CPU_COUNT(&now) > 0;
}

static void *work(void *arg) {
    (void)arg;
    cpu_set_t pin;
    CPU_ZERO(&pin);
    CPU_SET(pin_cpu, &pin);
    pthread_setaffinity_np(pthread_self(), sizeof pin, &pin);
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&m);
        for (int k = 0; k < 2000; k++)
            counter++;
        pthread_mutex_unlock(&m);
        if (!mask_within_pin())
            atomic_fetch_add(&violations, 1);
    }
    return NULL;
}

int main(void) {
    alarm(20);
    // The last CPU we may use: corral's own core set starts at the first.
    cpu_set_t all;
    sched_getaffinity(0, sizeof all, &all);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all))
            pin_cpu = c;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, NULL);
    struct timespec d = {0, 300 * 1000 * 1000}; // long enough to be confined
    nanosleep(&d, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("pinned to cpu %d, mask violations %d\n", pin_cpu, atomic_load(&violations));
    return atomic_load(&violations) == 0 ? 0 : 1;
}
