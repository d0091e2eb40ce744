/* fork in a multithreaded parent, then locks and a condvar in the child;
 * a process-shared mutex between parent and child. */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int stop;
static long busy_count;

static void *busy(void *arg) {
    (void)arg;
    while (!stop) {
        pthread_mutex_lock(&mu);
        busy_count++;
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void *child_signaller(void *flag) {
    pthread_mutex_lock(&mu);
    *(int *)flag = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

struct shared { pthread_mutex_t m; long n; };

int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, busy, NULL);
    usleep(20000);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* only this thread exists; mu may be held by a vanished thread, so use fresh ones */
        pthread_mutex_init(&mu, NULL);
        pthread_cond_init(&cv, NULL);
        int flag = 0;
        pthread_t s;
        pthread_mutex_lock(&mu);
        pthread_create(&s, NULL, child_signaller, &flag);
        while (!flag) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        pthread_join(s, NULL);
        printf("child: locked, waited and was signalled\n");
        fflush(stdout);
        _exit(7);
    }
    int status;
    waitpid(pid, &status, 0);
    stop = 1;
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("parent: child exited %d, busy threads ran: %d\n", WEXITSTATUS(status), busy_count > 0);

    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->m, &a);
    pid = fork();
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&sh->m);
        sh->n++;
        pthread_mutex_unlock(&sh->m);
    }
    if (pid == 0) _exit(0);
    waitpid(pid, &status, 0);
    printf("process-shared mutex: %ld\n", sh->n);
    return 0;
}
