// `corral run --load-after-contended N`: what spans the load. A thread
// asleep in glibc's pthread_cond_wait before the load is woken after it by
// a signal given under corral's lock, wakes holding the mutex, and corral
// releases it; a child forked before the load is still deferred, contends
// on its own and loads corral in itself. Prints "ok" and exits 0 when every
// step holds; FAIL and exit 1 otherwise.
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER; // the condition's mutex
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER; // contended until corral loads
static int ready, woken;                                 // under cm
static atomic_int waiting;

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
// rounds), or gives up after 50 million rounds, when the caller's load
// check fails.
static void *hammer(void *arg) {
    for (long i = 0; i < 50000000 && (i % 256 != 0 || !corral_loaded()); i++) {
        pthread_mutex_lock(&hot);
        for (volatile int k = 0; k < 50; k++)
            ;
        pthread_mutex_unlock(&hot);
    }
    return arg;
}

static void contend_until_loaded(void) {
    pthread_t h[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&h[i], 0, hammer, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(h[i], 0);
}

static void *wait_for_ready(void *arg) {
    pthread_mutex_lock(&cm);
    atomic_store(&waiting, 1);
    while (!ready)
        pthread_cond_wait(&c, &cm);
    woken = 1;
    pthread_mutex_unlock(&cm);
    return arg;
}

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: %s\n", what);                                                            \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void) {
    CHECK(!corral_loaded(), "corral's library is not loaded before any contention");

    // A child forked now inherits the deferred state: it loads corral in
    // itself once it contends, and its parent is not loaded by that.
    fflush(stdout);
    pid_t kid = fork();
    CHECK(kid >= 0, "fork");
    if (kid == 0) {
        if (corral_loaded())
            _exit(2);
        contend_until_loaded();
        _exit(corral_loaded() ? 0 : 3);
    }
    int status = 0;
    CHECK(waitpid(kid, &status, 0) == kid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 2, "the child was not loaded at its fork");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child's own contention loaded corral in it");
    CHECK(!corral_loaded(), "the parent stays on glibc's locks");

    pthread_t w;
    pthread_create(&w, 0, wait_for_ready, 0);
    while (!atomic_load(&waiting))
        usleep(1000);
    usleep(50000); // the waiter goes to sleep in glibc's condition wait
    CHECK(!corral_loaded(), "still glibc's locks before contention");

    contend_until_loaded();
    CHECK(corral_loaded(), "contention loaded corral's library");

    CHECK(pthread_mutex_lock(&cm) == 0, "corral takes the condition's mutex");
    ready = 1;
    CHECK(pthread_cond_signal(&c) == 0, "signal under corral's lock");
    CHECK(pthread_mutex_unlock(&cm) == 0, "corral releases the condition's mutex");
    pthread_join(w, 0);
    CHECK(pthread_mutex_lock(&cm) == 0, "the woken thread's unlock left the mutex free");
    CHECK(woken, "the thread asleep in glibc's condition wait woke with the mutex");
    CHECK(pthread_mutex_unlock(&cm) == 0, "and corral releases it again");
    printf("ok\n");
    return 0;
}
