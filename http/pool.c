/*
 * pool.c - the server's database connections: a few, opened when first
 * needed and kept for the requests that follow.
 *
 * libmicrohttpd runs each HTTP connection on a thread of its own; a
 * request takes a store from the pool for as long as it is answered and
 * gives it back, and an event stream takes one for each look at the
 * events table, so a stream open for hours holds none.  At most
 * HTTP_POOL_IDLE stores wait in the pool; one given back beyond that,
 * after a failure that may have left it unusable, or still inside a
 * transaction, is closed.  Every store
 * here is opened with store_open_existing(): the server never creates a
 * database, and only SQLite touches its files (store/sqlite.c).
 */
#include <pthread.h>
#include <stdlib.h>

#include "http/internal.h"
#include "store/store.h"

void http_pool_init(struct http_server *s)
{
    pthread_mutex_init(&s->pool_mu, NULL);
    s->nidle = 0;
}

int http_pool_take(struct http_server *s, store **out)
{
    store *st = NULL;

    pthread_mutex_lock(&s->pool_mu);
    if (s->nidle > 0)
        st = s->idle[--s->nidle];
    pthread_mutex_unlock(&s->pool_mu);
    if (st) {
        *out = st;
        return 0;
    }
    return store_open_existing(out, s->db_path);
}

void http_pool_give(struct http_server *s, store *st, int usable)
{
    if (!st)
        return;
    /* a store a request left inside a transaction would hold its snapshot
     * (and its locks) into the next request: never given again */
    if (usable && !store_in_tx(st)) {
        pthread_mutex_lock(&s->pool_mu);
        if (s->nidle < HTTP_POOL_IDLE) {
            s->idle[s->nidle++] = st;
            st = NULL;
        }
        pthread_mutex_unlock(&s->pool_mu);
    }
    store_close(st);
}

void http_pool_close(struct http_server *s)
{
    pthread_mutex_lock(&s->pool_mu);
    for (int i = 0; i < s->nidle; i++)
        store_close(s->idle[i]);
    s->nidle = 0;
    pthread_mutex_unlock(&s->pool_mu);
    pthread_mutex_destroy(&s->pool_mu);
}
