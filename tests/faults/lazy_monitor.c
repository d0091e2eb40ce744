// A process that never makes a second thread must not pay for corral's
// monitor (a thread waking every tick): a shell script's execs, idle
// sleepers. Fails if a thread exists before the first pthread_create; then
// a fork child (the daemon pattern: fork first, threads later) makes
// threads that contend, and must finish with exact counts.
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200000; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static int run_threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    return counter == 4 * 200000 ? 0 : 1;
}

int main(void)
{
    // Locks taken single-threaded must not start it either.
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
    }
    int before = threads_now();
    if (before != 1) {
        printf("%d threads before the first pthread_create (want 1)\n", before);
        return 1;
    }
    pid_t child = fork();
    if (child == 0)
        _exit(run_threads());
    int status;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("fork child failed (status %#x)\n", status);
        return 1;
    }
    if (run_threads() != 0) {
        printf("counter %ld\n", counter);
        return 1;
    }
    printf("1 thread before pthread_create; fork child and parent counted exactly\n");
    return 0;
}
