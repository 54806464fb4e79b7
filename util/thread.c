/*
 * thread.c - starting a detached thread: the one-shot workers (a dashboard call, a
 * simulated submitter, a relay) that nobody joins and that report back through their
 * own state.
 */
#include <errno.h>
#include <pthread.h>

#include "util/util.h"

int util_thread_detached(void *(*fn)(void *), void *arg)
{
    pthread_attr_t at;
    pthread_t t;
    int rc = pthread_attr_init(&at);
    if (rc != 0)
        return -rc;
    rc = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (rc == 0)
        rc = pthread_create(&t, &at, fn, arg);
    pthread_attr_destroy(&at);
    return -rc;
}
