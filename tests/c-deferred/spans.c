// `corral run --load-after-contended N`: what spans the load. A thread
// asleep in glibc's pthread_cond_wait before the load is woken after it by
// a signal given under corral's lock, wakes holding the mutex, and corral
// releases it; a child forked before the load is still deferred, contends
// on its own and loads corral in itself. Prints "ok" and exits 0 when every
// step holds; FAIL and exit 1 otherwise.
#include "deferred.h"

#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER; // the condition's mutex
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready, woken;                                 // under cm
static atomic_int waiting;

static void *wait_for_ready(void *arg) {
    pthread_mutex_lock(&cm);
    atomic_store(&waiting, 1);
    while (!ready)
        pthread_cond_wait(&c, &cm);
    woken = 1;
    pthread_mutex_unlock(&cm);
    return arg;
}

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
