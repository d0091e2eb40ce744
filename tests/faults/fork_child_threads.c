// Fault 3: a child that forks without exec and then runs its own threads
// on a contended mutex must finish as it does without corral (0.03 s
// plain). The child inherits corral's locks but no monitor; its waiters
// once spun without bound behind preempted holders (killed at 60 s).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 16
#define ITERS 20000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&m);
        for (int k = 0; k < 50; k++)
            counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static int run_threads(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return counter == (long)THREADS * ITERS * 50 ? 0 : 1;
}

int main(void) {
    // A second thread first, so the parent's runtime (and monitor) starts.
    pthread_t warm;
    pthread_create(&warm, NULL, work, NULL);
    pthread_join(warm, NULL);
    counter = 0;
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20); // plain: well under a second
        _exit(run_threads());
    }
    int status;
    waitpid(pid, &status, 0);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("child %s\n", ok ? "finished" : WIFSIGNALED(status) ? "killed" : "wrong count");
    return ok ? 0 : 1;
}
