// POSIX lets a thread destroy and free a mutex as soon as it can take it:
// the thread that released it must not touch it again. corral's unlock
// once looked for parked waiters after the release and, seeing heap
// garbage there, wrote a wake-up mark into freed memory (pigz under
// --lock futex: heap corruption, a crash in malloc on every run). Here a
// worker signals and unlocks while main, woken, takes the mutex, frees the
// object and reuses its memory with a pattern that must stay intact.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 20000
#define PATTERN 0x01

struct bolt {
    pthread_mutex_t m;
    pthread_cond_t c;
    int flag;
};

static struct bolt *_Atomic shared;
static atomic_int done;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        struct bolt *b;
        while (!(b = atomic_load(&shared)))
            ;
        atomic_store(&shared, NULL);
        pthread_mutex_lock(&b->m);
        b->flag = 1;
        pthread_cond_signal(&b->c);
        pthread_mutex_unlock(&b->m);
        atomic_fetch_add(&done, 1);
    }
    return NULL;
}

int main(void)
{
    alarm(100);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    long corrupted = 0;
    for (int i = 0; i < ROUNDS; i++) {
        struct bolt *b = malloc(sizeof *b);
        pthread_mutex_init(&b->m, NULL);
        pthread_cond_init(&b->c, NULL);
        b->flag = 0;
        pthread_mutex_lock(&b->m);
        atomic_store(&shared, b);
        while (!b->flag)
            pthread_cond_wait(&b->c, &b->m);
        pthread_mutex_unlock(&b->m);
        pthread_cond_destroy(&b->c);
        pthread_mutex_destroy(&b->m);
        free(b);
        // Most often the same chunk: the released mutex's memory.
        unsigned char *reuse = malloc(sizeof *b);
        memset(reuse, PATTERN, sizeof *b);
        while (atomic_load(&done) <= i)
            ;
        for (size_t k = 0; k < sizeof *b; k++)
            corrupted += reuse[k] != PATTERN;
        free(reuse);
    }
    pthread_join(t, NULL);
    printf("rounds %d, bytes written after free %ld\n", ROUNDS, corrupted);
    return corrupted != 0;
}
