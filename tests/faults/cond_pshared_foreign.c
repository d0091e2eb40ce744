// Fault 27: a process-shared condition variable and mutex, shared with a
// process that is not under corral. Under a spinning --lock corral laid its
// own sequence counter over every condition variable, which glibc's in the
// other process neither reads nor bumps: both processes slept in futex for
// ever. Here the two play a few thousand moves of ping-pong on a
// PTHREAD_PROCESS_SHARED mutex and condition variable in a shared file
// mapping (waits, timed waits, signals and broadcasts): with the objects made
// by the process without corral, then by this one, then with both processes
// under corral, on the same lock and on another (a spinning one and a
// parking one); last, two threads of this process on a process-shared
// condition variable with a private mutex (corral's own under a spinning
// lock). The other process is this program re-executed, with LD_PRELOAD and
// the CORRAL_* environment removed, kept, or kept with CORRAL_LOCK changed.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000

extern char **environ;

struct shared {
    pthread_mutex_t m;
    pthread_cond_t c;
    atomic_int ready; // the objects are initialised
    int turn;         // whose move: 0 this process, 1 the other (under m)
    int moves;        // under m
};

static struct shared *map(const char *path, int create) {
    int fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0600);
    if (fd < 0 || (create && ftruncate(fd, sizeof(struct shared)) != 0)) {
        perror(path);
        exit(1);
    }
    void *p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static void init_objects(struct shared *s) {
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    if (pthread_mutex_init(&s->m, &ma) != 0 || pthread_cond_init(&s->c, &ca) != 0) {
        fprintf(stderr, "init failed\n");
        exit(1);
    }
    s->turn = 0;
    s->moves = 0;
    atomic_store(&s->ready, 1);
}

// Plays side `me` (0 or 1) of ROUNDS moves on `c` and `m`: waits for its
// turn (a timed wait every third round), passes it, and wakes the other
// side (a broadcast every fifth round).
static int play(pthread_cond_t *c, pthread_mutex_t *m, int *turn, int *moves, int me) {
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(m);
        while (*turn != me) {
            int rc;
            if (i % 3 == 0) {
                struct timespec t;
                clock_gettime(CLOCK_REALTIME, &t);
                t.tv_sec += 10;
                rc = pthread_cond_timedwait(c, m, &t);
            } else {
                rc = pthread_cond_wait(c, m);
            }
            if (rc != 0) {
                fprintf(stderr, "side %d, round %d: wait: %s\n", me, i, strerror(rc));
                return 1;
            }
        }
        *turn = !me;
        ++*moves;
        if (i % 5 == 0)
            pthread_cond_broadcast(c);
        else
            pthread_cond_signal(c);
        pthread_mutex_unlock(m);
    }
    return 0;
}

// The other process: `prog PATH side INIT`.
static int side(const char *path, int init) {
    alarm(30);
    struct shared *s = map(path, 0);
    if (init)
        init_objects(s);
    while (!atomic_load(&s->ready))
        usleep(1000);
    return play(&s->c, &s->m, &s->turn, &s->moves, 1);
}

enum other { FOREIGN, SAME_LOCK, OTHER_LOCK };

// The other process's environment: without corral (no LD_PRELOAD, no
// CORRAL_*), as this one's, or with another lock (a spinning one where
// this process's parks, else a parking one) loaded from the first call.
static char **env_for(enum other other) {
    if (other == SAME_LOCK)
        return environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int corral = strncmp(environ[i], "CORRAL_", 7) == 0;
        if (other == FOREIGN && (corral || strncmp(environ[i], "LD_PRELOAD=", 11) == 0))
            continue;
        if (strncmp(environ[i], "CORRAL_LOCK=", 12) == 0 ||
            strncmp(environ[i], "CORRAL_LOAD_AFTER_CONTENDED=", 28) == 0)
            continue;
        env[k++] = environ[i];
    }
    if (other == OTHER_LOCK) {
        const char *mine = getenv("CORRAL_LOCK");
        int parks = !mine || !strcmp(mine, "futex") || !strcmp(mine, "adaptive");
        env[k++] = parks ? "CORRAL_LOCK=ticket" : "CORRAL_LOCK=futex";
        env[k++] = "CORRAL_LOAD_AFTER_CONTENDED=0";
    }
    return env;
}

// One game against a re-executed copy of this program: `init_there` says
// who initialises the objects, `other` what the copy runs on.
static int game(struct shared *s, const char *path, int init_there, enum other other,
                const char *name) {
    memset(s, 0, sizeof *s);
    if (!init_there)
        init_objects(s);
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {"cond_pshared_foreign", (char *)path, "side", init_there ? "1" : "0", NULL};
        execve("/proc/self/exe", argv, env_for(other));
        perror("execve");
        _exit(127);
    }
    while (!atomic_load(&s->ready))
        usleep(1000);
    int bad = play(&s->c, &s->m, &s->turn, &s->moves, 0);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: the other process failed (status %#x)\n", name, status);
        bad = 1;
    }
    // Nobody signals now: a timed wait must time out.
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += 20 * 1000 * 1000;
    if (t.tv_nsec >= 1000000000) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&s->m);
    int rc = pthread_cond_timedwait(&s->c, &s->m, &t);
    int moves = s->moves;
    pthread_mutex_unlock(&s->m);
    if (rc != ETIMEDOUT) {
        fprintf(stderr, "%s: idle timed wait returned %d\n", name, rc);
        bad = 1;
    }
    if (moves != 2 * ROUNDS) {
        fprintf(stderr, "%s: %d moves, not %d\n", name, moves, 2 * ROUNDS);
        bad = 1;
    }
    pthread_cond_destroy(&s->c);
    pthread_mutex_destroy(&s->m);
    return bad;
}

static pthread_mutex_t private_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t *shared_c;
static int private_turn, private_moves;

static void *other_thread(void *arg) {
    (void)arg;
    return (void *)(long)play(shared_c, &private_m, &private_turn, &private_moves, 1);
}

// Two threads of this process: a process-shared condition variable with a
// private mutex.
static int threads(struct shared *s) {
    memset(s, 0, sizeof *s);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&s->c, &ca);
    shared_c = &s->c;
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    int bad = play(shared_c, &private_m, &private_turn, &private_moves, 0);
    void *r;
    pthread_join(t, &r);
    if (r != NULL || private_moves != 2 * ROUNDS) {
        fprintf(stderr, "threads: %d moves, not %d\n", private_moves, 2 * ROUNDS);
        bad = 1;
    }
    pthread_cond_destroy(&s->c);
    return bad;
}

static double ms_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRATCH\n", argv[0]);
        return 2;
    }
    if (argc == 4 && strcmp(argv[2], "side") == 0)
        return side(argv[1], atoi(argv[3]));
    alarm(40);
    struct shared *s = map(argv[1], 1);
    static const struct {
        const char *name;
        int init_there;
        enum other other;
    } games[] = {
        {"made by the process without corral", 1, FOREIGN},
        {"made here, played with the process without corral", 0, FOREIGN},
        {"both processes under corral", 1, SAME_LOCK},
        {"the other process under another lock", 0, OTHER_LOCK},
    };
    int bad = 0;
    char times[256] = "";
    for (size_t i = 0; i < sizeof games / sizeof games[0]; i++) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bad |= game(s, argv[1], games[i].init_there, games[i].other, games[i].name);
        size_t len = strlen(times);
        snprintf(times + len, sizeof times - len, "%s%.0f", i ? ", " : "", ms_since(&t0));
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bad |= threads(s);
    size_t len = strlen(times);
    snprintf(times + len, sizeof times - len, ", %.0f", ms_since(&t0));
    unlink(argv[1]);
    printf("%d moves each: foreign-made, made here, both under corral, another lock there, "
           "threads with a private mutex (ms: %s)\n",
           2 * ROUNDS, times);
    return bad;
}
