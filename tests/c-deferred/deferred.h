// What the tests/c-deferred programs share: whether corral's library is
// loaded, contention that loads it, and a check that fails the program.
#ifndef CORRAL_DEFERRED_H
#define CORRAL_DEFERRED_H

#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER; // contended until corral loads

static int find_corral(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (strstr(info->dlpi_name, "libcorral_preload"))
        *(int *)found = 1;
    return 0;
}

static int corral_loaded(void) {
    int found = 0;
    dl_iterate_phdr(find_corral, &found);
    return found;
}

// Contends on `hot` until corral's library is loaded (looked for every 256
// rounds: dl_iterate_phdr takes the loader's lock), or gives up after
// 50 million rounds (seconds), when the caller's load check fails.
static void *hammer(void *arg) {
    for (long i = 0; i < 50000000 && (i % 256 != 0 || !corral_loaded()); i++) {
        pthread_mutex_lock(&hot);
        for (volatile int k = 0; k < 50; k++)
            ;
        pthread_mutex_unlock(&hot);
    }
    return arg;
}

// Two threads hammer `hot` until corral's library is loaded (or they give up).
static void contend_until_loaded(void) {
    pthread_t h[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&h[i], 0, hammer, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(h[i], 0);
}

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: %s\n", what);                                                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

#endif
