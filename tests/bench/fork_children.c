/* corral's fixed cost per process: CHILDREN forked children, each making
 * two threads that lock a mutex 100 times and sleep 20 ms. Nothing
 * contends, so what corral adds is its per-process start (the preload in
 * each child, the monitor thread at its second thread) and exit. Compare
 * the CPU time with and without corral:
 *
 *   cc -O2 -pthread -o fork_children tests/bench/fork_children.c
 *   perf stat -e task-clock ./fork_children 64
 *   perf stat -e task-clock corral run --quiet -- ./fork_children 64
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    usleep(20000);
    return NULL;
}

int main(int argc, char **argv) {
    int children = argc > 1 ? atoi(argv[1]) : 64;
    for (int i = 0; i < children; i++) {
        if (fork() == 0) {
            pthread_t t[2];
            for (int j = 0; j < 2; j++)
                pthread_create(&t[j], NULL, work, NULL);
            for (int j = 0; j < 2; j++)
                pthread_join(t[j], NULL);
            _exit(0);
        }
    }
    while (wait(NULL) > 0) {
    }
    return 0;
}
