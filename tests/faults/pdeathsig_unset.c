// Issue 46 row 6: a program under `corral run` must find its parent-death
// signal as it would without corral: 0. corral once armed
// PR_SET_PDEATHSIG (SIGKILL) on the program it started, so that it died
// with corral; a program that reads it (to set its own and compare, or a
// daemon that checks it) saw 9 first thing in main. Reads it in a
// constructor, in main, and in a thread that contends on a mutex (so that
// corral's full library is loaded by then, however it loads).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>

static int at_constructor = -1;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static int pdeathsig(void) {
    int sig = -1;
    if (prctl(PR_GET_PDEATHSIG, &sig) != 0)
        return -1;
    return sig;
}

__attribute__((constructor)) static void early(void) { at_constructor = pdeathsig(); }

static void *contend(void *arg) {
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    *(int *)arg = pdeathsig();
    return NULL;
}

int main(void) {
    int at_main = pdeathsig();
    int in_thread[2] = {-1, -1};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, contend, &in_thread[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    int after = pdeathsig();
    printf("parent-death signal: constructor %d, main %d, threads %d %d, after %d\n",
           at_constructor, at_main, in_thread[0], in_thread[1], after);
    if (at_constructor || at_main || in_thread[0] || in_thread[1] || after || counter != 200000)
        return 1;
    printf("no parent-death signal armed (constructor, main, threads)\n");
    return 0;
}
