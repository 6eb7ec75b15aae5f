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
#include <stdint.h>
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

#ifdef POLICY_INTERNAL
/*
 * Building the set (parse.c) and checking it (check.c).  Each call adds
 * to the block grant_block_open opened last; words are copied.
 */
void grant_block_open(struct grant_set *);

/*
 * A `policy NAME [FILE...]` line.  With files (absolute) it defines NAME:
 * returns 0, or -1 when NAME is defined already (*PREV_FILE, *PREV_LINE:
 * where; the block still names it).  Without, it names NAME (a reference
 * that check.c resolves).
 */
int grant_block_policy(struct grant_set *, const char *name,
    const char *const *files, size_t nfiles, const char *file, unsigned line,
    unsigned col, const char **prev_file, unsigned *prev_line);

/* A word of a `users` or `groups` line (a name, or a decimal id). */
void grant_block_user(struct grant_set *, const char *word);
void grant_block_group(struct grant_set *, const char *word);

/*
 * `login USER SECRET` (SECRET named at LINE:COL): returns 0, or -1 when
 * USER has a login already (*PREV_FILE, *PREV_LINE: where).
 */
int grant_block_login(struct grant_set *, const char *user, const char *secret,
    const char *file, unsigned line, unsigned col, const char **prev_file,
    unsigned *prev_line);

/* A `from` block: FAMILY 4 or 6, the network ADDR (host bits clear). */
void grant_block_from(
    struct grant_set *, int family, const uint8_t *addr, unsigned plen);

/* A policy line, for the second pass: NAME and where it was written. */
struct grant_ref {
	const char *name;
	const char *file;
	unsigned line, col;
	int defines; /* it has files */
};

/* Every policy line of every block, in file order. */
size_t grant_ref_count(const struct grant_set *);
const struct grant_ref *grant_ref_at(const struct grant_set *, size_t i);

/* Login I: its user, its secret's name and where that was named. */
size_t grant_login_count(const struct grant_set *);
const struct grant_ref *
grant_login_at(const struct grant_set *, size_t i, const char **user);
#endif

#endif /* PH_GRANT_H */
