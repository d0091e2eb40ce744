/* Spin locks: mutual exclusion under contention, trylock's EBUSY. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_spinlock_t sl;
static long counter;

static void *adder(void *arg) {
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        pthread_spin_lock(&sl);
        counter++;
        pthread_spin_unlock(&sl);
    }
    return NULL;
}

static void *try_it(void *arg) {
    (void)arg;
    return (void *)(long)pthread_spin_trylock(&sl);
}

int main(void) {
    pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE);
    pthread_t t[4];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, adder, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("spin counter: %ld\n", counter);
    pthread_spin_lock(&sl);
    void *rc;
    pthread_create(&t[0], NULL, try_it, NULL);
    pthread_join(t[0], &rc);
    printf("trylock while held: %s\n", (long)rc == EBUSY ? "EBUSY" : "other");
    pthread_spin_unlock(&sl);
    printf("trylock when free: %d\n", pthread_spin_trylock(&sl));
    pthread_spin_unlock(&sl);
    printf("destroy: %d\n", pthread_spin_destroy(&sl));
    return 0;
}
