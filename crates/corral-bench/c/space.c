// The program `corral bench space` runs: one lock workload whose shape is
// set by its one argument, a point of the space in its printed form,
//   threads=8,locks=4,skew=0.50,cs-ns=1200,out-ns=300,inside=yield,
//   kind=rwlock,read-share=0.80,duration-ms=300
// It runs for duration-ms and prints "ops=N seconds=S" on stdout: the
// critical sections done and the time they took, by its own clock, from
// the moment every thread is ready.
//
// inside: what the critical section does besides cs-ns of work: none,
// yield (sched_yield), sleep (nanosleep of cs-ns instead of the work; the
// kernel's timer slack makes it 50 us or more), syscall (a 64-byte read of
// /dev/zero), alloc (malloc, touch, free).
// kind: mutex; rwlock (a read lock with probability read-share); condvar
// (a bounded queue per lock, producer and consumer threads in pairs, each
// pair on one queue: the hot one with probability skew).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum inside { IN_NONE, IN_YIELD, IN_SLEEP, IN_SYSCALL, IN_ALLOC };
enum kind { K_MUTEX, K_RWLOCK, K_CONDVAR };

#define QUEUE_CAP 8

struct lock {
    pthread_mutex_t m;
    pthread_rwlock_t rw;
    pthread_cond_t not_empty, not_full;
    int count;
    char pad[64];
};

static struct {
    long threads, locks, cs_ns, out_ns, duration_ms;
    double skew, read_share;
    enum inside inside;
    enum kind kind;
} p = {1, 1, 100, 0, 300, 0.0, 0.0, IN_NONE, K_MUTEX};

static struct lock *locks;
static pthread_barrier_t start;
static atomic_int stop;
static double ns_per_iter = 1.0;
static long cs_iters, out_iters;
static int devzero = -1;

struct worker {
    long index;
    uint64_t rng;
    unsigned long long ops;
    char pad[64];
};

static uint64_t next(uint64_t *s) {
    // splitmix64: cheap, and every thread's stream is its own.
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return (next(s) >> 11) * 0x1.0p-53; }

static long pick_lock(uint64_t *s) {
    if (unit(s) < p.skew)
        return 0;
    return (long)(next(s) % (uint64_t)p.locks);
}

static uint64_t sink;

// A chain of dependent multiply-adds: work the CPU cannot skip or overlap.
static void work(long iters) {
    uint64_t x = sink;
    for (long i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x));
    }
    sink = x;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void calibrate(void) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        work(200000);
        double dt = (now_s() - t0) * 1e9 / 200000;
        if (dt < best && dt > 0)
            best = dt;
    }
    ns_per_iter = best;
}

static void critical(struct worker *w) {
    switch (p.inside) {
    case IN_NONE:
        work(cs_iters);
        break;
    case IN_YIELD:
        work(cs_iters);
        sched_yield();
        break;
    case IN_SLEEP: {
        struct timespec t = {p.cs_ns / 1000000000L, p.cs_ns % 1000000000L};
        nanosleep(&t, NULL);
        break;
    }
    case IN_SYSCALL: {
        char buf[64];
        work(cs_iters);
        if (read(devzero, buf, sizeof buf) < 0)
            abort();
        break;
    }
    case IN_ALLOC: {
        work(cs_iters);
        size_t n = 64 + next(&w->rng) % 4096;
        volatile char *b = malloc(n);
        if (!b)
            abort();
        b[0] = 1;
        b[n - 1] = 1;
        free((void *)b);
        break;
    }
    }
}

static void one_mutex(struct worker *w) {
    struct lock *l = &locks[pick_lock(&w->rng)];
    pthread_mutex_lock(&l->m);
    critical(w);
    pthread_mutex_unlock(&l->m);
}

static void one_rwlock(struct worker *w) {
    struct lock *l = &locks[pick_lock(&w->rng)];
    if (unit(&w->rng) < p.read_share)
        pthread_rwlock_rdlock(&l->rw);
    else
        pthread_rwlock_wrlock(&l->rw);
    critical(w);
    pthread_rwlock_unlock(&l->rw);
}

// One push (delta 1) or pop (-1) on queue l; 0 once stopped.
static int queue_op(struct worker *w, struct lock *l, int delta) {
    pthread_mutex_lock(&l->m);
    pthread_cond_t *wait_on = delta > 0 ? &l->not_full : &l->not_empty;
    while (!atomic_load_explicit(&stop, memory_order_relaxed) &&
           (delta > 0 ? l->count == QUEUE_CAP : l->count == 0))
        pthread_cond_wait(wait_on, &l->m);
    if (atomic_load_explicit(&stop, memory_order_relaxed)) {
        pthread_mutex_unlock(&l->m);
        return 0;
    }
    l->count += delta;
    critical(w);
    pthread_cond_signal(delta > 0 ? &l->not_empty : &l->not_full);
    pthread_mutex_unlock(&l->m);
    return 1;
}

static void *run(void *arg) {
    struct worker *w = arg;
    // A condvar pair's queue, fixed for the run so that every queue has
    // a producer and a consumer (no two threads can wait on each other's
    // queues for ever).
    long pair = w->index / 2;
    uint64_t pair_rng = 0x5EEDull + (uint64_t)pair;
    long queue = pick_lock(&pair_rng);
    int paired = w->index + 1 < p.threads || w->index % 2 == 1;
    pthread_barrier_wait(&start);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        switch (p.kind) {
        case K_MUTEX:
            one_mutex(w);
            break;
        case K_RWLOCK:
            one_rwlock(w);
            break;
        case K_CONDVAR:
            if (!paired) {
                // The odd thread out both produces and consumes.
                if (!queue_op(w, &locks[queue], 1) || !queue_op(w, &locks[queue], -1))
                    return NULL;
                w->ops++;
            } else if (!queue_op(w, &locks[queue], w->index % 2 == 0 ? 1 : -1)) {
                return NULL;
            }
            break;
        }
        w->ops++;
        work(out_iters);
    }
    return NULL;
}

static void usage(const char *why) {
    fprintf(stderr, "space: %s\nusage: space threads=N,locks=N,skew=F,cs-ns=N,out-ns=N,"
                    "inside=none|yield|sleep|syscall|alloc,kind=mutex|rwlock|condvar,"
                    "read-share=F,duration-ms=N\n",
            why);
    exit(2);
}

static long whole(const char *key, const char *v, long lo, long hi) {
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == 0 || *end != 0 || n < lo || n > hi) {
        fprintf(stderr, "space: %s=%s: expected a whole number from %ld to %ld\n", key, v, lo, hi);
        exit(2);
    }
    return n;
}

static double share(const char *key, const char *v) {
    char *end;
    double f = strtod(v, &end);
    if (*v == 0 || *end != 0 || !(f >= 0.0 && f <= 1.0)) {
        fprintf(stderr, "space: %s=%s: expected a number from 0 to 1\n", key, v);
        exit(2);
    }
    return f;
}

static void parse(char *spec) {
    for (char *save, *kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        if (!v)
            usage("every part is key=value");
        *v++ = 0;
        if (!strcmp(kv, "threads"))
            p.threads = whole(kv, v, 1, 4096);
        else if (!strcmp(kv, "locks"))
            p.locks = whole(kv, v, 1, 65536);
        else if (!strcmp(kv, "skew"))
            p.skew = share(kv, v);
        else if (!strcmp(kv, "cs-ns"))
            p.cs_ns = whole(kv, v, 0, 1000000000L);
        else if (!strcmp(kv, "out-ns"))
            p.out_ns = whole(kv, v, 0, 1000000000L);
        else if (!strcmp(kv, "read-share"))
            p.read_share = share(kv, v);
        else if (!strcmp(kv, "duration-ms"))
            p.duration_ms = whole(kv, v, 1, 3600000L);
        else if (!strcmp(kv, "inside")) {
            const char *names[] = {"none", "yield", "sleep", "syscall", "alloc"};
            int i = 0;
            while (i < 5 && strcmp(v, names[i]))
                i++;
            if (i == 5)
                usage("inside: expected none, yield, sleep, syscall or alloc");
            p.inside = (enum inside)i;
        } else if (!strcmp(kv, "kind")) {
            if (!strcmp(v, "mutex"))
                p.kind = K_MUTEX;
            else if (!strcmp(v, "rwlock"))
                p.kind = K_RWLOCK;
            else if (!strcmp(v, "condvar"))
                p.kind = K_CONDVAR;
            else
                usage("kind: expected mutex, rwlock or condvar");
        } else {
            fprintf(stderr, "space: unknown key '%s'\n", kv);
            exit(2);
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 2)
        usage("expected one argument");
    parse(argv[1]);
    calibrate();
    cs_iters = (long)(p.cs_ns / ns_per_iter);
    out_iters = (long)(p.out_ns / ns_per_iter);
    devzero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    if (devzero < 0)
        usage("cannot open /dev/zero");
    locks = calloc((size_t)p.locks, sizeof *locks);
    struct worker *ws = calloc((size_t)p.threads, sizeof *ws);
    pthread_t *ts = calloc((size_t)p.threads, sizeof *ts);
    if (!locks || !ws || !ts)
        usage("out of memory");
    for (long i = 0; i < p.locks; i++) {
        pthread_mutex_init(&locks[i].m, NULL);
        pthread_rwlock_init(&locks[i].rw, NULL);
        pthread_cond_init(&locks[i].not_empty, NULL);
        pthread_cond_init(&locks[i].not_full, NULL);
    }
    pthread_barrier_init(&start, NULL, (unsigned)p.threads + 1);
    for (long i = 0; i < p.threads; i++) {
        ws[i].index = i;
        ws[i].rng = 0xC0FFEEull * (uint64_t)(i + 1);
        if (pthread_create(&ts[i], NULL, run, &ws[i]))
            usage("pthread_create failed");
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    struct timespec d = {p.duration_ms / 1000, (p.duration_ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    atomic_store(&stop, 1);
    double seconds = now_s() - t0;
    for (long i = 0; i < p.locks; i++) {
        pthread_mutex_lock(&locks[i].m);
        pthread_cond_broadcast(&locks[i].not_empty);
        pthread_cond_broadcast(&locks[i].not_full);
        pthread_mutex_unlock(&locks[i].m);
    }
    unsigned long long ops = 0;
    for (long i = 0; i < p.threads; i++) {
        pthread_join(ts[i], NULL);
        ops += ws[i].ops;
    }
    printf("ops=%llu seconds=%.6f\n", ops, seconds);
    return 0;
}
