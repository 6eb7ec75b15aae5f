/*
 * grant.h: who may use which policy -- the `broker` blocks of the
 * configuration of a broker (`pinhole proxy --broker`) or of a gateway
 * (`pinhole proxy --listen` serving several policies), pinhole.conf(5)
 * BROKER:
 *
 *   broker {
 *       policy NAME FILE...   # a policy clients ask for by NAME; files
 *                             # relative to this file's directory
 *       policy OTHER          # one defined in another block
 *       users alice 1001      # local users (a broker's clients, told
 *                             # apart by SO_PEERCRED): names or uids
 *       groups ci 2001        # local groups, primary or supplementary
 *       login runner1 SECRET  # a gateway's clients: Proxy-Authorization
 *                             # Basic runner1:<secret SECRET's value>
 *       from 10.0.3.0/24      # a gateway's clients by source address
 *   }
 *
 * Every identity of a block may use every policy the block names.  A
 * policy is defined once (NAME FILE...), named again without files
 * elsewhere; a login is defined once.  Nothing else is granted: a user in
 * no block gets nothing.  The grants are a leaf of policy/: they keep
 * names and addresses; the caller resolves a peer's uid and groups.
 */
#ifndef PH_GRANT_H
#define PH_GRANT_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

struct grant_set;

/* A local user, as the broker learned it (SO_PEERCRED, getpwuid). */
struct grant_user {
	uid_t uid;
	const char *name; /* NULL: the uid has no name */
	const gid_t *gids; /* primary, then supplementary */
	const char *const *gnames; /* each's name; an entry NULL: none */
	size_t ngids;
};

/* An empty set; grant_set_free frees it (NULL does nothing). */
struct grant_set *grant_set_new(void);
void grant_set_free(struct grant_set *);

/* How many policies the set defines (0: no broker block). */
size_t grant_count(const struct grant_set *);

/* Policy I's name, and its files (absolute, in order) in *N. */
const char *grant_name(const struct grant_set *, size_t i);
const char *const *grant_files(const struct grant_set *, size_t i, size_t *n);

/* Where policy I was defined (its `policy` line). */
const char *grant_where(const struct grant_set *, size_t i, unsigned *line);

/* The index of the policy called NAME, or -1. */
long grant_find(const struct grant_set *, const char *name);

/* Whether user U may ask for policy I (a `users` or `groups` line of a
 * block that names it). */
int grant_admits_user(
    const struct grant_set *, size_t i, const struct grant_user *u);

/*
 * A gateway's client from address SA (AF_INET or AF_INET6), having
 * presented proxy login USER (NULL: no Proxy-Authorization): the index of
 * the policy it gets, or -1; *SECRET then names the secret its password
 * must equal (NULL when the address alone admits it).  A login admits
 * only from its block's `from` addresses when the block has any; a
 * block without logins admits by address alone; the first block in file
 * order that admits decides.
 */
long grant_gateway(const struct grant_set *, const struct sockaddr *sa,
    const char *user, const char **secret);

#endif /* PH_GRANT_H */
