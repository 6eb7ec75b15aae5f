/*
 * tunnel.h: the bytes of an established tunnel, moved with
 * splice(2) between the two sockets through a pipe per direction, so they
 * never enter user space.  libevent 2.1's bufferevents read 4 KiB at a
 * time with an ioctl and an epoll_ctl around each read; on this path that
 * cost a CONNECT tunnel four fifths of the loopback throughput (see
 * bench/README.md).  A direction takes a pipe from the loop's pool
 * (pipepool.h, ctx->pipes) while bytes are in it and gives it back once it
 * is empty, so an idle tunnel holds two sockets, two events and no
 * buffers; without a pipe (none left) it copies.  The bufferevent relay,
 * for what splice cannot carry, is here too.
 */
#ifndef PH_TUNNEL_H
#define PH_TUNNEL_H

struct session;
struct tunnel;

/*
 * Answers S's CONNECT with "200 Connection established" and takes over
 * both of its connections (their bufferevents are freed; S keeps the
 * counters, the idle timer and the close path).  Returns 0, or -1 when
 * the bufferevent relay must carry the tunnel instead (bytes still queued
 * in a buffer, or no memory): the 200 is then queued on the client's
 * bufferevent, and nothing else changed.
 */
int tunnel_start(struct session *s);

/*
 * Switches S to relaying bytes both ways through its bufferevents (a
 * CONNECT that tunnel_start() could not take, or after a 101), and arms
 * the idle timer.
 */
void tunnel_relay_start(struct session *s);

/* Closes the sockets and pipes and frees T.  NULL does nothing. */
void tunnel_free(struct tunnel *t);

#endif
