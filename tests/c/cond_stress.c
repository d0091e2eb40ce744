/* Condition variables under churn, for lost wake-ups: 3 producers and 4
 * consumers on one queue; producers signal inside and outside the mutex
 * and sometimes broadcast; two consumers wait with 1 ms timeouts. A lost
 * wake-up hangs the run (the harness's timeout); a wrong count or sum
 * shows in the output. Also one signal per waiter to a crowd of sleepers:
 * each signal must wake one, or the crowd never drains. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define PRODUCERS 3
#define CONSUMERS 4
#define ITEMS 30000
#define SLOTS 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buf[SLOTS];
static int head, count, producers_done;
static long sum, taken;

static void *producer(void *arg) {
    long id = (long)arg;
    for (long i = 1; i <= ITEMS; i++) {
        pthread_mutex_lock(&mu);
        while (count == SLOTS)
            pthread_cond_wait(&not_full, &mu);
        buf[(head + count) % SLOTS] = i;
        count++;
        int outside = (i + id) % 3 == 0;
        if (!outside) {
            if (i % 97 == 0)
                pthread_cond_broadcast(&not_empty);
            else
                pthread_cond_signal(&not_empty);
        }
        pthread_mutex_unlock(&mu);
        if (outside)
            pthread_cond_signal(&not_empty);
    }
    pthread_mutex_lock(&mu);
    producers_done++;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *consumer(void *arg) {
    int timed = (long)arg % 2;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (count == 0 && producers_done < PRODUCERS) {
            if (timed) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 1000000;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                int rc = pthread_cond_timedwait(&not_empty, &mu, &ts);
                if (rc != 0 && rc != ETIMEDOUT)
                    printf("timedwait: %d\n", rc);
            } else {
                pthread_cond_wait(&not_empty, &mu);
            }
        }
        if (count == 0) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        sum += buf[head];
        head = (head + 1) % SLOTS;
        count--;
        taken++;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&mu);
    }
}

/* A crowd of sleepers, released one signal at a time. */
#define CROWD 6
static pthread_cond_t gate = PTHREAD_COND_INITIALIZER;
static int tickets, asleep, left;

static void *sleeper(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    asleep++;
    while (tickets == 0)
        pthread_cond_wait(&gate, &mu);
    tickets--;
    left++;
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void) {
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, (void *)i);
    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    long expect = PRODUCERS * ((long)ITEMS * (ITEMS + 1) / 2);
    printf("taken %ld, sum ok: %d\n", taken, sum == expect);

    pthread_t s[CROWD];
    for (int i = 0; i < CROWD; i++)
        pthread_create(&s[i], NULL, sleeper, NULL);
    for (;;) {
        pthread_mutex_lock(&mu);
        int all = asleep == CROWD;
        pthread_mutex_unlock(&mu);
        if (all)
            break;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    for (int i = 0; i < CROWD; i++) {
        pthread_mutex_lock(&mu);
        tickets++;
        pthread_cond_signal(&gate);
        pthread_mutex_unlock(&mu);
    }
    for (int i = 0; i < CROWD; i++)
        pthread_join(s[i], NULL);
    printf("crowd released one signal each: %d of %d\n", left, CROWD);
    pthread_cond_destroy(&gate);
    pthread_cond_destroy(&not_empty);
    pthread_cond_destroy(&not_full);
    return 0;
}
