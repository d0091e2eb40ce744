/* pthread_rwlock_* contracts as glibc keeps them: static initialisers,
 * tryrdlock/trywrlock EBUSY, timed and clock locks (ETIMEDOUT after the
 * deadline, EINVAL for a bad one), EDEADLK for the write holder, the three
 * kinds (recursive readers while a writer waits by default; a waiting
 * writer keeps new readers out with PREFER_WRITER_NONRECURSIVE_NP; who
 * gets a released write lock), and a process-shared rwlock across fork. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_rwlock_t st = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t st_wnr = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static const char *name(int rc) {
    switch (rc) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EINVAL: return "EINVAL";
    case EAGAIN: return "EAGAIN";
    default: return strerror(rc);
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    return t;
}

/* Bounds loose enough for a loaded 2-core machine: never early, and late
 * by less than 5 s. */
static const char *waited(double start, long ms) {
    double took = now_ms() - start;
    return took >= ms - 1 && took < ms + 5000 ? "on time" : "WRONG TIME";
}

/* Waits until thread `tid` sleeps in the kernel: blocked in the lock. */
static void until_asleep(volatile pid_t *tid) {
    while (!__atomic_load_n(tid, __ATOMIC_ACQUIRE)) usleep(1000);
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)*tid);
    for (int i = 0; i < 30000; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = 0;
        char *end = strrchr(buf, ')');
        if (end && end[1] == ' ' && end[2] == 'S') return;
        usleep(1000);
    }
    printf("thread %d never blocked\n", (int)*tid);
    exit(1);
}

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }

struct probe { pthread_rwlock_t *rw; char out[160]; };

static void *try_from_other(void *arg) {
    struct probe *p = arg;
    int r = pthread_rwlock_tryrdlock(p->rw);
    if (r == 0) pthread_rwlock_unlock(p->rw);
    int w = pthread_rwlock_trywrlock(p->rw);
    if (w == 0) pthread_rwlock_unlock(p->rw);
    snprintf(p->out, sizeof p->out, "tryrdlock %s, trywrlock %s", name(r), name(w));
    return NULL;
}

static void other(void *(*fn)(void *), struct probe *p) {
    pthread_t t;
    pthread_create(&t, NULL, fn, p);
    pthread_join(t, NULL);
}

static void statics(void) {
    int a = pthread_rwlock_rdlock(&st), b = pthread_rwlock_rdlock(&st);
    int c = pthread_rwlock_tryrdlock(&st), d = pthread_rwlock_trywrlock(&st);
    int u1 = pthread_rwlock_unlock(&st), u2 = pthread_rwlock_unlock(&st), u3 = pthread_rwlock_unlock(&st);
    int w = pthread_rwlock_wrlock(&st), u4 = pthread_rwlock_unlock(&st);
    printf("static: rdlock x2 %s %s, tryrdlock %s, trywrlock %s, unlock x3 %s %s %s, wrlock %s, unlock %s\n",
           name(a), name(b), name(c), name(d), name(u1), name(u2), name(u3), name(w), name(u4));
}

static void try_locks(void) {
    pthread_rwlock_t rw;
    pthread_rwlock_init(&rw, NULL);
    struct probe p = { .rw = &rw };
    pthread_rwlock_wrlock(&rw);
    other(try_from_other, &p);
    printf("write-held, other thread: %s\n", p.out);
    pthread_rwlock_unlock(&rw);
    pthread_rwlock_rdlock(&rw);
    other(try_from_other, &p);
    printf("read-held, other thread: %s\n", p.out);
    pthread_rwlock_unlock(&rw);
    other(try_from_other, &p);
    printf("free, other thread: %s\n", p.out);
    printf("destroy: %s\n", name(pthread_rwlock_destroy(&rw)));
}

static void deadlocks(void) {
    pthread_rwlock_t rw;
    pthread_rwlock_init(&rw, NULL);
    struct timespec rt = in_ms(CLOCK_REALTIME, 1000), mono = in_ms(CLOCK_MONOTONIC, 1000);
    int w = pthread_rwlock_wrlock(&rw);
    int ww = pthread_rwlock_wrlock(&rw), rd = pthread_rwlock_rdlock(&rw);
    int tw = pthread_rwlock_timedwrlock(&rw, &rt), tr = pthread_rwlock_timedrdlock(&rw, &rt);
    int cw = pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &mono);
    int cr = pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &mono);
    int yr = pthread_rwlock_tryrdlock(&rw), yw = pthread_rwlock_trywrlock(&rw);
    int u = pthread_rwlock_unlock(&rw);
    printf("writer: wrlock %s; again: wrlock %s, rdlock %s, timedwrlock %s, timedrdlock %s, "
           "clockwrlock %s, clockrdlock %s, tryrdlock %s, trywrlock %s; unlock %s\n",
           name(w), name(ww), name(rd), name(tw), name(tr), name(cw), name(cr), name(yr), name(yw), name(u));
}

static void *timeouts_from_other(void *arg) {
    struct probe *p = arg;
    double start = now_ms();
    struct timespec t = in_ms(CLOCK_REALTIME, 50);
    int tr = pthread_rwlock_timedrdlock(p->rw, &t);
    const char *tr_time = waited(start, 50);
    start = now_ms();
    t = in_ms(CLOCK_REALTIME, 50);
    int tw = pthread_rwlock_timedwrlock(p->rw, &t);
    const char *tw_time = waited(start, 50);
    start = now_ms();
    t = in_ms(CLOCK_MONOTONIC, 30);
    int cw = pthread_rwlock_clockwrlock(p->rw, CLOCK_MONOTONIC, &t);
    const char *cw_time = waited(start, 30);
    if (tr == 0) pthread_rwlock_unlock(p->rw);
    if (tw == 0) pthread_rwlock_unlock(p->rw);
    if (cw == 0) pthread_rwlock_unlock(p->rw);
    snprintf(p->out, sizeof p->out, "timedrdlock %s (%s), timedwrlock %s (%s), clockwrlock %s (%s)",
             name(tr), tr == 0 ? "-" : tr_time, name(tw), tw_time, name(cw), cw_time);
    return NULL;
}

static void *bad_deadlines(void *arg) {
    struct probe *p = arg;
    struct timespec bad = in_ms(CLOCK_REALTIME, 0), past = { .tv_sec = 1, .tv_nsec = 0 };
    struct timespec before_epoch = { .tv_sec = -1, .tv_nsec = 0 };
    bad.tv_nsec = 1000000000L;
    int a = pthread_rwlock_timedrdlock(p->rw, &bad);
    int b = pthread_rwlock_clockwrlock(p->rw, CLOCK_PROCESS_CPUTIME_ID, &past);
    int c = pthread_rwlock_timedwrlock(p->rw, &past);
    if (c == 0) pthread_rwlock_unlock(p->rw);
    int d = pthread_rwlock_clockrdlock(p->rw, CLOCK_MONOTONIC, &before_epoch);
    if (d == 0) pthread_rwlock_unlock(p->rw);
    snprintf(p->out, sizeof p->out, "nsec 1e9 %s, cpu clock %s, past deadline %s, before epoch %s",
             name(a), name(b), name(c), name(d));
    return NULL;
}

static void *timed_success(void *arg) {
    struct probe *p = arg;
    struct timespec t = in_ms(CLOCK_REALTIME, 10000);
    int r = pthread_rwlock_timedrdlock(p->rw, &t);
    if (r == 0) pthread_rwlock_unlock(p->rw);
    snprintf(p->out, sizeof p->out, "timedrdlock %s", name(r));
    return NULL;
}

static void timeouts(void) {
    pthread_rwlock_t rw;
    pthread_rwlock_init(&rw, NULL);
    struct probe p = { .rw = &rw };
    pthread_rwlock_wrlock(&rw);
    other(timeouts_from_other, &p);
    printf("write-held, other thread: %s\n", p.out);
    other(bad_deadlines, &p);
    printf("write-held, other thread: %s\n", p.out);
    pthread_rwlock_unlock(&rw);
    pthread_rwlock_rdlock(&rw);
    other(timeouts_from_other, &p);
    printf("read-held, other thread: %s\n", p.out);
    pthread_rwlock_unlock(&rw);
    other(bad_deadlines, &p);
    printf("free, other thread: %s\n", p.out);

    pthread_rwlock_wrlock(&rw);
    pthread_t t;
    pthread_create(&t, NULL, timed_success, &p);
    usleep(30000);
    pthread_rwlock_unlock(&rw);
    pthread_join(t, NULL);
    printf("released within the deadline, other thread: %s\n", p.out);
}

/* One acquisition in its own thread: records its turn, holds 20 ms. */
struct turn {
    pthread_rwlock_t *rw;
    int write;
    volatile pid_t tid;
    int *next, mine, rc;
};

static void *take_turn(void *arg) {
    struct turn *t = arg;
    __atomic_store_n(&t->tid, my_tid(), __ATOMIC_RELEASE);
    t->rc = t->write ? pthread_rwlock_wrlock(t->rw) : pthread_rwlock_rdlock(t->rw);
    t->mine = __atomic_fetch_add(t->next, 1, __ATOMIC_SEQ_CST);
    usleep(20000);
    pthread_rwlock_unlock(t->rw);
    return NULL;
}

static void start_turn(pthread_t *th, struct turn *t, pthread_rwlock_t *rw, int write, int *next) {
    *t = (struct turn){ .rw = rw, .write = write, .next = next };
    pthread_create(th, NULL, take_turn, t);
    until_asleep(&t->tid);
}

static void *timed_reader(void *arg) {
    struct probe *p = arg;
    double start = now_ms();
    struct timespec t = in_ms(CLOCK_REALTIME, 50);
    int r = pthread_rwlock_timedrdlock(p->rw, &t);
    if (r == 0) pthread_rwlock_unlock(p->rw);
    snprintf(p->out, sizeof p->out, "timedrdlock %s (%s)", name(r), r == 0 ? "-" : waited(start, 50));
    return NULL;
}

/* A reader holds the lock and a writer waits: may readers still enter? */
static void writer_waits(const char *kind, pthread_rwlock_t *rw, int nonrecursive) {
    int next = 0;
    pthread_t wt, rt;
    struct turn w, r;
    struct probe p = { .rw = rw };
    pthread_rwlock_rdlock(rw);
    start_turn(&wt, &w, rw, 1, &next);
    other(try_from_other, &p);
    printf("%s, read-held, writer waiting: other thread %s", kind, p.out);
    if (nonrecursive) {
        other(timed_reader, &p);
        printf(", %s", p.out);
        start_turn(&rt, &r, rw, 0, &next);
        pthread_rwlock_unlock(rw);
        pthread_join(wt, NULL);
        pthread_join(rt, NULL);
        printf("; released: writer turn %d, waiting reader turn %d\n", w.mine, r.mine);
    } else {
        int again = pthread_rwlock_rdlock(rw);
        printf(", recursive rdlock %s", name(again));
        if (again == 0) pthread_rwlock_unlock(rw);
        pthread_rwlock_unlock(rw);
        pthread_join(wt, NULL);
        printf("; released: writer %s\n", name(w.rc));
    }
}

/* A writer releases while a reader and a writer wait: who goes first? */
static void handover(const char *kind, pthread_rwlock_t *rw) {
    int next = 0;
    pthread_t rt, wt;
    struct turn r, w;
    pthread_rwlock_wrlock(rw);
    start_turn(&rt, &r, rw, 0, &next);
    start_turn(&wt, &w, rw, 1, &next);
    pthread_rwlock_unlock(rw);
    pthread_join(rt, NULL);
    pthread_join(wt, NULL);
    printf("%s, write released: waiting reader turn %d, waiting writer turn %d\n", kind, r.mine, w.mine);
}

static void kinds(void) {
    static const struct { const char *name; int kind; } k[] = {
        { "default (attr NULL)", -1 },
        { "PREFER_READER_NP", PTHREAD_RWLOCK_PREFER_READER_NP },
        { "PREFER_WRITER_NP", PTHREAD_RWLOCK_PREFER_WRITER_NP },
        { "PREFER_WRITER_NONRECURSIVE_NP", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP },
    };
    for (unsigned i = 0; i < sizeof k / sizeof k[0]; i++) {
        pthread_rwlock_t rw;
        pthread_rwlockattr_t a;
        pthread_rwlockattr_init(&a);
        if (k[i].kind >= 0) pthread_rwlockattr_setkind_np(&a, k[i].kind);
        pthread_rwlock_init(&rw, k[i].kind >= 0 ? &a : NULL);
        writer_waits(k[i].name, &rw, k[i].kind == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        handover(k[i].name, &rw);
        pthread_rwlock_destroy(&rw);
        pthread_rwlockattr_destroy(&a);
    }
    writer_waits("static WRITER_NONRECURSIVE_INITIALIZER", &st_wnr, 1);
    handover("static WRITER_NONRECURSIVE_INITIALIZER", &st_wnr);
}

struct shared { pthread_rwlock_t rw; long n; int child_checked; char child[160]; };

static void process_shared(void) {
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&s->rw, &a);
    pthread_rwlock_wrlock(&s->rw);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int r = pthread_rwlock_tryrdlock(&s->rw), w = pthread_rwlock_trywrlock(&s->rw);
        struct timespec t = in_ms(CLOCK_REALTIME, 30);
        int tr = pthread_rwlock_timedrdlock(&s->rw, &t);
        snprintf(s->child, sizeof s->child, "tryrdlock %s, trywrlock %s, timedrdlock %s",
                 name(r), name(w), name(tr));
        __atomic_store_n(&s->child_checked, 1, __ATOMIC_RELEASE);
        for (int i = 0; i < 20000; i++) {
            pthread_rwlock_wrlock(&s->rw);
            s->n++;
            pthread_rwlock_unlock(&s->rw);
            pthread_rwlock_rdlock(&s->rw);
            pthread_rwlock_unlock(&s->rw);
        }
        _exit(0);
    }
    while (!__atomic_load_n(&s->child_checked, __ATOMIC_ACQUIRE)) usleep(1000);
    pthread_rwlock_unlock(&s->rw);
    for (int i = 0; i < 20000; i++) {
        pthread_rwlock_wrlock(&s->rw);
        s->n++;
        pthread_rwlock_unlock(&s->rw);
        pthread_rwlock_rdlock(&s->rw);
        pthread_rwlock_unlock(&s->rw);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("process-shared, write-held by parent, child: %s\n", s->child);
    printf("process-shared, parent and child 20000 writes each: n %ld, child exit %d\n", s->n, WEXITSTATUS(status));
    pthread_rwlock_destroy(&s->rw);
    munmap(s, sizeof *s);
}

int main(void) {
    statics();
    try_locks();
    deadlocks();
    timeouts();
    kinds();
    process_shared();
    return 0;
}
