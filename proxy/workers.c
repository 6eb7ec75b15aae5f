/*
 * workers.c: the other event loops of `pinhole proxy --workers N` and
 * `pinhole run --workers N`, each in its own thread (workers.h says what
 * is per loop and what is shared).
 *
 * A thread only runs its loop.  What it is asked to do arrives as mail:
 * a connection handed off by loop 0, a policy to swap in, a stop.  Mail
 * is a queue under the thread's mutex, taken once per message (once per
 * handed-off connection or reload, never per request), and an eventfd
 * that wakes its loop.  The answers (a policy swapped, a loop stopped)
 * are counters the caller's loop reads when its own eventfd rings.
 */
#include <sys/eventfd.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "proxy/dns.h"
#include "proxy/proxy.h"
#include "proxy/tls.h"
#include "proxy/workers.h"

enum mail_kind {
	MAIL_CONN, /* a connection to serve */
	MAIL_POLICY, /* a policy to swap in */
	MAIL_STOP, /* stop accepting; end the loop after the grace */
};

struct mail {
	struct mail *next;
	enum mail_kind kind;
	struct proxy_handoff h; /* MAIL_CONN */
	struct proxy_policy_share *share; /* MAIL_POLICY */
	unsigned grace_ms; /* MAIL_STOP */
};

struct worker {
	struct workers *ws;
	unsigned id; /* 1..n-1: loop 0 is the caller's */
	struct event_base *base;
	struct dns *dns;
	struct tls *tls; /* a clone of the loaded one; NULL: none */
	struct metrics *metrics; /* a shard; NULL: none */
	struct proxy *px;
	pthread_t thread;
	int running; /* the thread was started (to be joined) */
	int bell; /* eventfd: mail */
	struct event *bell_ev;
	pthread_mutex_t lock; /* the mail below */
	struct mail *first, **last;
	struct mail stop; /* its stop, made in advance: it cannot fail */
	int stop_sent; /* the stop was posted (the caller's side) */
	int draining; /* the stop came: worker_main's turns, then the stop */
};

struct workers {
	struct workers_config cf;
	struct event_base *main;
	struct worker *w; /* cf.n - 1 of them */
	unsigned nw;
	unsigned next; /* round robin of hand-offs: 0 is loop 0 */
	int bell; /* eventfd: an answer for the caller's loop */
	struct event *bell_ev;
	atomic_uint applying; /* threads still to swap the last policy in */
	atomic_uint running; /* threads whose loop has not stopped */
	int apply_said; /* cf.applied was called for the last policy */
	int stop_said; /* cf.stopped was called */
	int stopping;
};

static void
ring(int fd)
{
	uint64_t one = 1;

	(void)!write(fd, &one, sizeof(one));
}

/* Posts M to W's loop.  Called from the caller's loop only. */
static void
post(struct worker *w, struct mail *m)
{
	m->next = NULL;
	pthread_mutex_lock(&w->lock);
	*w->last = m;
	w->last = &m->next;
	pthread_mutex_unlock(&w->lock);
	ring(w->bell);
}

/* The thread's proxy stopped: its loop ends; the caller is told. */
static void
on_stopped(void *arg)
{
	struct worker *w = arg;

	event_base_loopexit(w->base, NULL);
	atomic_fetch_sub(&w->ws->running, 1);
	ring(w->ws->bell);
}

/* One piece of mail, on W's loop. */
static void
deliver(struct worker *w, struct mail *m)
{
	switch (m->kind) {
	case MAIL_CONN:
		proxy_serve_handoff(w->px, &m->h);
		break;
	case MAIL_POLICY:
		proxy_set_policy_shared(w->px, m->share);
		atomic_fetch_sub(&w->ws->applying, 1);
		ring(w->ws->bell);
		break;
	case MAIL_STOP:
		if (w->ws->cf.drain_turns > 0) {
			/* Out of this loop; worker_main drains, then stops. */
			w->draining = 1;
			event_base_loopbreak(w->base);
		} else
			proxy_shutdown(w->px, m->grace_ms, on_stopped, w);
		return; /* w->stop */
	}
	free(m);
}

static void
on_mail(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct mail *m, *next;
	uint64_t n;

	(void)what;
	(void)!read(fd, &n, sizeof(n));
	pthread_mutex_lock(&w->lock);
	m = w->first;
	w->first = NULL;
	w->last = &w->first;
	pthread_mutex_unlock(&w->lock);
	for (; m != NULL; m = next) {
		next = m->next;
		deliver(w, m);
	}
}

/* The threads answered: a policy swapped in everywhere, all stopped. */
static void
on_answer(evutil_socket_t fd, short what, void *arg)
{
	struct workers *ws = arg;
	uint64_t n;

	(void)what;
	(void)!read(fd, &n, sizeof(n));
	if (!ws->apply_said && atomic_load(&ws->applying) == 0) {
		ws->apply_said = 1;
		if (ws->cf.applied != NULL)
			ws->cf.applied(ws->cf.arg);
	}
	if (ws->stopping && !ws->stop_said && atomic_load(&ws->running) == 0) {
		ws->stop_said = 1;
		if (ws->cf.stopped != NULL)
			ws->cf.stopped(ws->cf.arg);
	}
}

/*
 * The thread: its loop until its proxy stopped.  With drain_turns, the
 * stop breaks the loop first; turns that do not wait then read what the
 * clients sent last (and serve what was handed off with the stop), as
 * the caller's loop does at a run's end; then the proxy stops, and its
 * sessions are closed and logged on the loop.
 */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned i;

	event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
	if (w->draining) {
		for (i = 0; i < w->ws->cf.drain_turns; i++)
			(void)event_base_loop(w->base, EVLOOP_NONBLOCK);
		proxy_shutdown(w->px, w->stop.grace_ms, on_stopped, w);
		event_base_loop(w->base, EVLOOP_NO_EXIT_ON_EMPTY);
	}
	return NULL;
}

/* An eventfd and its persistent event on BASE; 0 or -1. */
static int
bell_new(struct event_base *base, int *fd, struct event **ev,
    event_callback_fn cb, void *arg)
{
	if ((*fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -1;
	*ev = event_new(base, *fd, EV_READ | EV_PERSIST, cb, arg);
	return *ev != NULL && event_add(*ev, NULL) == 0 ? 0 : -1;
}

/* W's loop, resolver, TLS, metrics and proxy; 0 or -1 said. */
static int
worker_open(
    struct workers *ws, struct worker *w, struct proxy_policy_share *share)
{
	struct proxy_config pc = ws->cf.pc;
	char err[256];
	int r = -1;

	w->last = &w->first;
	pthread_mutex_init(&w->lock, NULL);
	if ((w->base = ws->cf.base_new()) == NULL ||
	    bell_new(w->base, &w->bell, &w->bell_ev, on_mail, w) != 0) {
		log_warnx(
		    "proxy: worker %u: cannot make its event loop", w->id);
		goto out;
	}
	if ((w->dns = dns_new(w->base, ws->cf.dns, ws->cf.dns_timeout_ms, err,
	         sizeof(err))) == NULL) {
		log_warnx("proxy: worker %u: DNS: %s", w->id, err);
		goto out;
	}
	if (pc.tls != NULL &&
	    (w->tls = tls_clone(pc.tls, err, sizeof(err))) == NULL) {
		log_warnx("proxy: worker %u: TLS: %s", w->id, err);
		goto out;
	}
	if (pc.metrics != NULL &&
	    (ws->cf.shard == NULL ||
	        (w->metrics = ws->cf.shard(pc.metrics)) == NULL)) {
		log_warnx("proxy: worker %u: no metrics shard", w->id);
		goto out;
	}
	r = 0;
out:
	if (r != 0) {
		proxy_policy_share_drop(share); /* its reference, unused */
		return -1;
	}
	pc.dns = w->dns;
	pc.tls = w->tls;
	pc.metrics = w->metrics;
	pc.policy = NULL;
	pc.policy_share = share;
	pc.handoff = NULL; /* only loop 0 hands off */
	if ((w->px = proxy_new(w->base, &pc)) == NULL) {
		log_warnx("proxy: worker %u: out of memory", w->id);
		return -1;
	}
	return 0;
}

struct workers *
workers_new(struct event_base *main, const struct workers_config *cf,
    struct proxy_policy_share *share)
{
	struct workers *ws = calloc(1, sizeof(*ws));
	unsigned i, given = 0;
	int ok = ws != NULL;

	if (ok) {
		ws->cf = *cf;
		ws->main = main;
		ws->bell = -1;
		ws->apply_said = 1;
		ok = (ws->w = calloc(cf->n - 1, sizeof(*ws->w))) != NULL &&
		    bell_new(main, &ws->bell, &ws->bell_ev, on_answer, ws) == 0;
	}
	for (i = 0; ok && i < cf->n - 1; i++) {
		ws->w[i].ws = ws;
		ws->w[i].id = i + 1;
		ws->w[i].bell = -1;
		ws->nw++;
		given++; /* taken over by proxy_new, even when it fails */
		ok = worker_open(ws, &ws->w[i], share) == 0;
	}
	for (; given < cf->n - 1; given++)
		proxy_policy_share_drop(share);
	if (!ok) {
		if (ws == NULL || ws->w == NULL)
			log_warnx("proxy: out of memory");
		workers_free(ws);
		ws = NULL;
	}
	return ws;
}

int
workers_listen(
    struct workers *ws, const char *spec, enum proxy_via via, unsigned port)
{
	char buf[128];
	const char *colon = strrchr(spec, ':');
	unsigned i, got;

	if (strncmp(spec, "unix:", 5) == 0)
		return 0;
	if (colon == NULL || (size_t)(colon - spec) + 8 > sizeof(buf))
		return -1;
	/* The port loop 0 bound (the kernel's pick for ":0"). */
	snprintf(buf, sizeof(buf), "%.*s:%u", (int)(colon - spec), spec, port);
	for (i = 0; i < ws->nw; i++)
		if (proxy_listen(ws->w[i].px, buf, via, &got) != 0)
			return -1;
	return 0;
}

int
workers_start(struct workers *ws)
{
	sigset_t all, old;
	unsigned i;
	int err = 0;

	/* Signals stay with the caller's thread (threads inherit masks). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < ws->nw && err == 0; i++) {
		err = pthread_create(
		    &ws->w[i].thread, NULL, worker_main, &ws->w[i]);
		if (err == 0) {
			ws->w[i].running = 1;
			atomic_fetch_add(&ws->running, 1);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0)
		log_warnx(
		    "proxy: cannot start a worker thread: %s", strerror(err));
	return err != 0 ? -1 : 0;
}

int
workers_handoff(void *arg, const struct proxy_handoff *h)
{
	struct workers *ws = arg;
	unsigned turn = ws->next;
	struct mail *m;

	ws->next = (ws->next + 1) % (ws->nw + 1);
	if (turn == 0 || ws->stopping || !ws->w[turn - 1].running ||
	    (m = calloc(1, sizeof(*m))) == NULL)
		return -1;
	m->kind = MAIL_CONN;
	m->h = *h;
	post(&ws->w[turn - 1], m);
	return 0;
}

void
workers_set_policy(struct workers *ws, struct proxy_policy_share *share)
{
	struct mail *m;
	unsigned i;

	ws->apply_said = 0;
	atomic_store(&ws->applying, ws->nw);
	for (i = 0; i < ws->nw; i++) {
		if ((m = calloc(1, sizeof(*m))) == NULL) {
			/* This loop keeps its policy: say so, count it done. */
			log_warnx("reload: worker %u: out of memory; it keeps "
			          "the old policy",
			    i + 1);
			proxy_policy_share_drop(share);
			atomic_fetch_sub(&ws->applying, 1);
			ring(ws->bell);
			continue;
		}
		m->kind = MAIL_POLICY;
		m->share = share;
		post(&ws->w[i], m);
	}
}

/* Posts a stop to each running thread that has none yet. */
static void
stop_all(struct workers *ws, unsigned grace_ms)
{
	unsigned i;

	for (i = 0; i < ws->nw; i++) {
		if (!ws->w[i].running || ws->w[i].stop_sent)
			continue;
		ws->w[i].stop.kind = MAIL_STOP;
		ws->w[i].stop.grace_ms = grace_ms;
		ws->w[i].stop_sent = 1;
		post(&ws->w[i], &ws->w[i].stop);
	}
}

void
workers_stop(struct workers *ws, unsigned grace_ms)
{
	ws->stopping = 1;
	stop_all(ws, grace_ms);
	ring(ws->bell); /* none running: said at once, on the loop */
}

size_t
workers_sessions(const struct workers *ws)
{
	size_t n = 0;
	unsigned i;

	/* Each thread's own count, read racily: for a message only. */
	for (i = 0; i < ws->nw; i++)
		n += proxy_session_count(ws->w[i].px);
	return n;
}

/* Frees W (its thread joined, or never started). */
static void
worker_free(struct worker *w)
{
	struct mail *m, *next;

	for (m = w->first; m != NULL; m = next) {
		next = m->next;
		if (m->kind == MAIL_CONN)
			proxy_serve_handoff(w->px, &m->h); /* closes it */
		else if (m->kind == MAIL_POLICY)
			proxy_policy_share_drop(m->share);
		if (m != &w->stop)
			free(m);
	}
	proxy_free(w->px);
	dns_free(w->dns);
	tls_free(w->tls);
	if (w->bell_ev != NULL)
		event_free(w->bell_ev);
	if (w->bell >= 0)
		close(w->bell);
	if (w->base != NULL)
		event_base_free(w->base);
	pthread_mutex_destroy(&w->lock);
}

void
workers_free(struct workers *ws)
{
	unsigned i;

	if (ws == NULL)
		return;
	ws->stopping = 1;
	stop_all(ws, 0);
	for (i = 0; i < ws->nw; i++)
		if (ws->w[i].running)
			(void)pthread_join(ws->w[i].thread, NULL);
	for (i = 0; i < ws->nw; i++)
		worker_free(&ws->w[i]);
	if (ws->bell_ev != NULL)
		event_free(ws->bell_ev);
	if (ws->bell >= 0)
		close(ws->bell);
	free(ws->w);
	free(ws);
}

unsigned
workers_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 ||
	    (n = CPU_COUNT(&set)) < 1)
		return 1;
	return (unsigned)n;
}
