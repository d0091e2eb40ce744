/* Throughput and CPU time of one default-kind rwlock: THREADS threads for
 * MS milliseconds, each operation a write with probability WRITE_PCT % (16
 * counters bumped) or else a read (the 16 summed), with a little work
 * outside the lock. Prints one line: ops/s and CPU seconds per second.
 *
 *   rwlock_bench THREADS WRITE_PCT MS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long data[16];
static volatile int stop;
static int write_pct;

static void *worker(void *arg) {
    unsigned long x = (unsigned long)arg * 2654435761u + 1, ops = 0, sink = 0;
    while (!stop) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        if ((int)(x % 100) < write_pct) {
            pthread_rwlock_wrlock(&rw);
            for (int i = 0; i < 16; i++) data[i]++;
            pthread_rwlock_unlock(&rw);
        } else {
            pthread_rwlock_rdlock(&rw);
            for (int i = 0; i < 16; i++) sink += data[i];
            pthread_rwlock_unlock(&rw);
        }
        for (int i = 0; i < 64; i++) sink = sink * 31 + i; /* work outside the lock */
        ops++;
    }
    return (void *)(ops + (sink & 0));
}

static double secs(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s THREADS WRITE_PCT MS\n", argv[0]); return 2; }
    int n = atoi(argv[1]), ms = atoi(argv[3]);
    write_pct = atoi(argv[2]);
    pthread_t t[256];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n && i < 256; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    usleep(ms * 1000);
    stop = 1;
    unsigned long ops = 0;
    for (int i = 0; i < n && i < 256; i++) {
        void *r;
        pthread_join(t[i], &r);
        ops += (unsigned long)r;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    double wall = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    double cpu = secs(u.ru_utime) + secs(u.ru_stime);
    printf("%.3f Mops/s %.2f cpu-s/s %.0f ns-cpu/op\n", ops / wall / 1e6, cpu / wall, cpu / ops * 1e9);
    return 0;
}
