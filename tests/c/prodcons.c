#define _GNU_SOURCE
/* Mutex + condition variable producer/consumer, plus timed and clock waits. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define PRODUCERS 1
#define CONSUMERS 1
#define ITEMS 20000
#define SLOTS 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buf[SLOTS];
static int head, count, done_producers;
static long consumed_sum, consumed_n;

static void *producer(void *arg) {
    long base = (long)arg * ITEMS;
    for (long i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&mu);
        while (count == SLOTS) pthread_cond_wait(&not_full, &mu);
        buf[(head + count) % SLOTS] = base + i;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&mu);
    }
    pthread_mutex_lock(&mu);
    done_producers++;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (count == 0 && done_producers < PRODUCERS) pthread_cond_wait(&not_empty, &mu);
        if (count == 0) { pthread_mutex_unlock(&mu); return NULL; }
        long v = buf[head];
        head = (head + 1) % SLOTS;
        count--;
        consumed_sum += v;
        consumed_n++;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&mu);
    }
}

static void add_ms(struct timespec *ts, long ms) {
    ts->tv_nsec += (ms % 1000) * 1000000L;
    ts->tv_sec += ms / 1000 + ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

int main(void) {
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++) pthread_create(&c[i], NULL, consumer, NULL);
    for (long i = 0; i < PRODUCERS; i++) pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++) pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++) pthread_join(c[i], NULL);
    long n = (long)PRODUCERS * ITEMS;
    long expect = PRODUCERS * ((long)ITEMS * (ITEMS + 1) / 2) + (long)ITEMS * ITEMS * (PRODUCERS * (PRODUCERS - 1) / 2);
    printf("consumed %ld items, sum ok: %d\n", consumed_n, consumed_sum == expect && consumed_n == n);

    /* timedwait with nobody signalling times out, with the mutex held again */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    add_ms(&ts, 30);
    pthread_mutex_lock(&mu);
    int rc = pthread_cond_timedwait(&not_empty, &mu, &ts);
    printf("timedwait: %s, relocked: %d\n", rc == ETIMEDOUT ? "ETIMEDOUT" : "other", pthread_mutex_trylock(&mu) == EBUSY);
    pthread_mutex_unlock(&mu);

    /* a monotonic-clock condvar from attributes */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_t mono;
    pthread_cond_init(&mono, &ca);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    add_ms(&ts, 20);
    pthread_mutex_lock(&mu);
    rc = pthread_cond_timedwait(&mono, &mu, &ts);
    printf("monotonic timedwait: %s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : "other");
    clock_gettime(CLOCK_MONOTONIC, &ts);
    add_ms(&ts, 20);
    rc = pthread_cond_clockwait(&mono, &mu, CLOCK_MONOTONIC, &ts);
    printf("clockwait: %s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : "other");
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&mono);
    return 0;
}
