// Fault 1: corral works with descriptors inside the program (its decision
// log, /proc files, the lock profile's maps copy at exit). A program that
// closes descriptors it did not open, at any moment, and reuses their
// numbers must never see one of corral's: closing it and opening its own
// file on the number would let corral write its lines into that file, or
// close it. corral once kept its log open and wrote JSON into the
// program's data file; later its log flushes and /proc reads, each a few
// microseconds long, could still be caught and closed the program's file
// (a CI run: "own 1 foreign 0").
//
// A scanner thread looks for descriptors the program did not open, while
// lock-intensive threads keep the monitor busy, and on through exit (where
// corral's last flush runs): any it finds fails the test.
// fault-locks: futex tas
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
#define SCAN_TO 128

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;
static atomic_int data_fd = -1;
static atomic_int pause_asked, paused, exiting;
static atomic_long foreign_fds;
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

// Closes what the program did not open, as a close-all loop would, and
// counts it. During exit a find ends the process with status 3.
static void *scan(void *arg) {
    (void)arg;
    for (;;) {
        if (atomic_load(&pause_asked) && !atomic_load(&exiting)) {
            // While main reads its file back (its descriptor is not known here).
            atomic_store(&paused, 1);
            while (!atomic_load(&exiting))
                usleep(100);
        }
        int own = atomic_load(&data_fd);
        for (int fd = 3; fd < SCAN_TO; fd++) {
            if (fd == own || fcntl(fd, F_GETFD) == -1)
                continue;
            close(fd);
            atomic_fetch_add(&foreign_fds, 1);
            if (atomic_load(&exiting)) {
                static const char msg[] = "a descriptor the program did not open, during exit\n";
                write(2, msg, sizeof msg - 1);
                _exit(3);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fd_reuse DATAFILE\n");
        return 2;
    }
    // Lock-intensive threads first, so the monitor has decisions to log.
    pthread_t t[THREADS], scanner;
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
    atomic_store(&data_fd, fd);
    pthread_create(&scanner, NULL, scan, NULL);
    int failed_writes = 0;
    for (int i = 0; i < LINES; i++) {
        if (dprintf(fd, "line %d\n", i) <= 0)
            failed_writes++;
        usleep(1000); // 1 s in all: many monitor rounds
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&pause_asked, 1);
    while (!atomic_load(&paused))
        usleep(100);
    if (close(fd) != 0)
        failed_writes++;
    long seen = atomic_load(&foreign_fds);
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
    printf("descriptors not the program's %ld, failed writes %d, own lines %d, foreign %d\n",
           seen, failed_writes, own, foreign);
    fflush(stdout);
    if (seen != 0 || failed_writes != 0 || own != LINES || foreign != 0)
        return 1;
    // The scanner runs on through exit, where corral's last round flushes.
    atomic_store(&exiting, 1);
    return 0;
}
