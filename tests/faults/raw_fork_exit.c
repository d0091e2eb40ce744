// Fault 6: children made by a raw clone (no pthread_atfork handlers run)
// must be able to exit. corral's exit flush once took the monitor's lock,
// which the monitor thread could hold at the moment of the clone: the
// child then hung in exit() for good. The fault is in the monitor, not
// the lock: two algorithms suffice (64 threads on a few cores would
// collapse a FIFO spin lock, which is not what this test is about).
// fault-deferred: no: a child cloned raw while another thread is inside
// the late load's dlopen inherits ld.so's load lock held, and exit() waits
// for it in _dl_fini for good (a thread's own dlopen does the same; only
// async-signal-safe calls are allowed in such a child). Loaded at the
// first call, corral's dlopen is done before the program's first thread.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// Many registered threads make each monitor round (which holds the lock)
// long; they mostly sleep, so no lock algorithm collapses.
#define THREADS 64
#define CHILDREN 1000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static long counter;

static void *contend(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
        usleep(500);
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, contend, NULL);
    int hung = 0, failed = 0;
    for (int i = 0; i < CHILDREN; i++) {
        long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        if (pid == 0) {
            alarm(2); // a hung child dies of SIGALRM instead of hanging the test
            exit(0);
        }
        if (pid < 0) {
            perror("clone");
            return 2;
        }
        int status;
        if (waitpid((pid_t)pid, &status, 0) < 0) {
            perror("waitpid");
            return 2;
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            hung++;
        else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("children %d hung %d failed %d\n", CHILDREN, hung, failed);
    return hung || failed;
}
