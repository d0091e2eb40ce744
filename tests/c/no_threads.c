/* A program that never calls pthread_create: locks, trylock, condvar
 * timeout, spin lock, all on the main thread. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

int main(void) {
    pthread_mutex_t m;
    pthread_mutex_init(&m, NULL);
    long n = 0;
    for (int i = 0; i < 1000000; i++) {
        pthread_mutex_lock(&m);
        n++;
        pthread_mutex_unlock(&m);
    }
    pthread_mutex_lock(&m);
    printf("count %ld, trylock held: %s\n", n, pthread_mutex_trylock(&m) == EBUSY ? "EBUSY" : "other");
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    printf("timedwait: %s\n", pthread_cond_timedwait(&c, &m, &ts) == ETIMEDOUT ? "ETIMEDOUT" : "other");
    pthread_mutex_unlock(&m);
    printf("destroy: %d\n", pthread_mutex_destroy(&m));
    pthread_spinlock_t s;
    pthread_spin_init(&s, 0);
    pthread_spin_lock(&s);
    printf("spin trylock held: %s\n", pthread_spin_trylock(&s) == EBUSY ? "EBUSY" : "other");
    pthread_spin_unlock(&s);
    return 0;
}
