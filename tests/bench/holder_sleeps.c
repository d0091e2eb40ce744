/* A lock holder that blocks inside its critical section (issue 10's case:
 * a holder that sleeps 50 us while it holds the mutex): THREADS threads
 * take one mutex for SECONDS seconds and sleep SLEEP_US inside it. Prints
 * the critical sections done; run it under /usr/bin/time (or ab.py) to
 * read the CPU time a lock spends on waiters that cannot get in.
 *
 *   cc -O2 -pthread -o holder_sleeps tests/bench/holder_sleeps.c
 *   ./holder_sleeps [THREADS=8] [SECONDS=2] [SLEEP_US=50]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;
static long done;
static long sleep_ns;

static void *worker(void *arg) {
    (void)arg;
    struct timespec nap = {sleep_ns / 1000000000L, sleep_ns % 1000000000L};
    while (!stop) {
        pthread_mutex_lock(&lock);
        nanosleep(&nap, NULL);
        done++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    double seconds = argc > 2 ? atof(argv[2]) : 2.0;
    sleep_ns = (argc > 3 ? atol(argv[3]) : 50) * 1000L;
    if (threads < 1 || threads > 256 || seconds <= 0) {
        fprintf(stderr, "usage: holder_sleeps [THREADS 1-256] [SECONDS] [SLEEP_US]\n");
        return 2;
    }
    pthread_t t[256];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    struct timespec run = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&run, NULL);
    stop = 1;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("%ld critical sections\n", done);
    return 0;
}
