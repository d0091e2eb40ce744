/* Readers and writers of one rwlock per kind: writers keep two counters
 * equal, readers check them under every kind of read lock (plain, try,
 * timed, clock, and recursive where the kind allows), and the final counts
 * are exact. A lost wake-up hangs (the runner's timeout fails it); a reader
 * that sees a half-done write, or two writers inside, is counted. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#define READERS 4
#define WRITERS 2
#define READS 20000
#define WRITES 5000

static pthread_rwlock_t rw;
static int recursive_ok;
static long a, b;
static int inside, torn, overlapped;
static long reads;
static pthread_barrier_t start;

static struct timespec later(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += 30;
    return t;
}

static void check(void) {
    if (a != b) __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&inside, __ATOMIC_RELAXED)) __atomic_add_fetch(&torn, 1, __ATOMIC_RELAXED);
}

static void *reader(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < READS; i++) {
        struct timespec t;
        switch ((i + id) % 5) {
        case 0: pthread_rwlock_rdlock(&rw); break;
        case 1: while (pthread_rwlock_tryrdlock(&rw) == EBUSY) sched_yield(); break;
        case 2: t = later(CLOCK_REALTIME); pthread_rwlock_timedrdlock(&rw, &t); break;
        case 3: t = later(CLOCK_MONOTONIC); pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &t); break;
        default:
            pthread_rwlock_rdlock(&rw);
            if (recursive_ok) {
                pthread_rwlock_rdlock(&rw);
                check();
                pthread_rwlock_unlock(&rw);
            }
        }
        check();
        __atomic_add_fetch(&reads, 1, __ATOMIC_RELAXED);
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

static void *writer(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < WRITES; i++) {
        struct timespec t;
        switch ((i + id) % 4) {
        case 0: pthread_rwlock_wrlock(&rw); break;
        case 1: while (pthread_rwlock_trywrlock(&rw) == EBUSY) sched_yield(); break;
        case 2: t = later(CLOCK_REALTIME); pthread_rwlock_timedwrlock(&rw, &t); break;
        default: t = later(CLOCK_MONOTONIC); pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &t);
        }
        if (__atomic_exchange_n(&inside, 1, __ATOMIC_RELAXED)) __atomic_add_fetch(&overlapped, 1, __ATOMIC_RELAXED);
        a++;
        if (i % 64 == 0) sched_yield(); /* let readers run into a half-done write */
        b++;
        __atomic_store_n(&inside, 0, __ATOMIC_RELAXED);
        pthread_rwlock_unlock(&rw);
    }
    return NULL;
}

int main(void) {
    static const struct { const char *name; int kind; } k[] = {
        { "PREFER_READER_NP (default)", PTHREAD_RWLOCK_PREFER_READER_NP },
        { "PREFER_WRITER_NP", PTHREAD_RWLOCK_PREFER_WRITER_NP },
        { "PREFER_WRITER_NONRECURSIVE_NP", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP },
    };
    for (unsigned n = 0; n < sizeof k / sizeof k[0]; n++) {
        pthread_rwlockattr_t attr;
        pthread_rwlockattr_init(&attr);
        pthread_rwlockattr_setkind_np(&attr, k[n].kind);
        pthread_rwlock_init(&rw, &attr);
        recursive_ok = k[n].kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
        a = b = reads = 0;
        torn = overlapped = 0;
        pthread_barrier_init(&start, NULL, READERS + WRITERS);
        pthread_t t[READERS + WRITERS];
        for (long i = 0; i < READERS; i++) pthread_create(&t[i], NULL, reader, (void *)i);
        for (long i = 0; i < WRITERS; i++) pthread_create(&t[READERS + i], NULL, writer, (void *)i);
        for (int i = 0; i < READERS + WRITERS; i++) pthread_join(t[i], NULL);
        printf("%s: %d readers, %d writers: writes %ld/%ld (a == b: %s), reads %ld, torn reads %d, overlapping writers %d, trywrlock after: %d\n",
               k[n].name, READERS, WRITERS, a, b, a == b ? "yes" : "no", reads, torn, overlapped,
               pthread_rwlock_trywrlock(&rw));
        pthread_rwlock_unlock(&rw);
        pthread_rwlock_destroy(&rw);
        pthread_rwlockattr_destroy(&attr);
        pthread_barrier_destroy(&start);
    }
    return 0;
}
