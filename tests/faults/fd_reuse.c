// Fault 1: a program that closes every descriptor it did not open and then
// opens its data file must find only its own lines in it. corral's decision
// log once kept a descriptor open inside the program and wrote its JSON
// lines through the number the program's data file had reused.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define LINES 1000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static volatile long counter;

static void *contend(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_mutex_lock(&m);
        for (int i = 0; i < 200; i++)
            counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fd_reuse DATAFILE\n");
        return 2;
    }
    // Lock-intensive threads first, so the monitor has decisions to log.
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, contend, NULL);
    usleep(50 * 1000);
    for (int fd = 3; fd < 4096; fd++)
        close(fd);
    int fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (fd < 0) {
        perror("open");
        return 2;
    }
    for (int i = 0; i < LINES; i++) {
        dprintf(fd, "line %d\n", i);
        usleep(300); // 0.3 s in all: many monitor rounds
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    close(fd);
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror("fopen");
        return 2;
    }
    char buf[4096];
    int own = 0, foreign = 0;
    while (fgets(buf, sizeof buf, f)) {
        char want[32];
        snprintf(want, sizeof want, "line %d\n", own);
        if (strcmp(buf, want) == 0)
            own++;
        else
            foreign++;
    }
    fclose(f);
    printf("own %d foreign %d\n", own, foreign);
    return own != LINES || foreign != 0;
}
