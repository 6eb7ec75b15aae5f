/*
 * grant.c: the broker blocks of a configuration (grant.h).
 *
 * A few blocks of a few lines each: everything is a scan over arrays in
 * file order, which is also the order grant_gateway must decide in.  A
 * block keeps the names of the policies it names (resolved when asked),
 * so a block may name a policy defined in a later one.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_INTERNAL
#include "common/xmalloc.h"
#include "grant.h"

struct gpolicy {
	char *name;
	char **files;
	size_t nfiles;
	char *file; /* its `policy` line */
	unsigned line;
};

struct gcidr {
	int family; /* 4 or 6 */
	uint8_t addr[16];
	unsigned plen;
};

/* A grant_ref and the strings it points to. */
struct oref {
	char *name, *file;
	struct grant_ref ref;
};

struct glogin {
	char *user;
	size_t block;
	struct oref secret; /* name: the secret's name */
};

struct gblock {
	char **names; /* the policies it names, in order */
	size_t nnames;
	char **users;
	size_t nusers;
	char **groups;
	size_t ngroups;
	struct gcidr *from;
	size_t nfrom;
	size_t nlogins;
};

struct grant_set {
	struct gpolicy *pol;
	size_t npol;
	struct gblock *blocks;
	size_t nblocks;
	struct glogin *logins;
	size_t nlogins;
	struct oref *refs; /* every policy line */
	size_t nrefs;
};

struct grant_set *
grant_set_new(void)
{
	return xcalloc(1, sizeof(struct grant_set));
}

static void
free_words(char **w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(w[i]);
	free(w);
}

void
grant_set_free(struct grant_set *g)
{
	size_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->npol; i++) {
		free(g->pol[i].name);
		free_words(g->pol[i].files, g->pol[i].nfiles);
		free(g->pol[i].file);
	}
	for (i = 0; i < g->nblocks; i++) {
		free_words(g->blocks[i].names, g->blocks[i].nnames);
		free_words(g->blocks[i].users, g->blocks[i].nusers);
		free_words(g->blocks[i].groups, g->blocks[i].ngroups);
		free(g->blocks[i].from);
	}
	for (i = 0; i < g->nlogins; i++) {
		free(g->logins[i].user);
		free(g->logins[i].secret.name);
		free(g->logins[i].secret.file);
	}
	for (i = 0; i < g->nrefs; i++) {
		free(g->refs[i].name);
		free(g->refs[i].file);
	}
	free(g->pol);
	free(g->blocks);
	free(g->logins);
	free(g->refs);
	free(g);
}

size_t
grant_count(const struct grant_set *g)
{
	return g == NULL ? 0 : g->npol;
}

const char *
grant_name(const struct grant_set *g, size_t i)
{
	return g != NULL && i < g->npol ? g->pol[i].name : NULL;
}

const char *const *
grant_files(const struct grant_set *g, size_t i, size_t *n)
{
	if (g == NULL || i >= g->npol) {
		*n = 0;
		return NULL;
	}
	*n = g->pol[i].nfiles;
	return (const char *const *)g->pol[i].files;
}

const char *
grant_where(const struct grant_set *g, size_t i, unsigned *line)
{
	if (g == NULL || i >= g->npol) {
		*line = 0;
		return NULL;
	}
	*line = g->pol[i].line;
	return g->pol[i].file;
}

long
grant_find(const struct grant_set *g, const char *name)
{
	size_t i;

	for (i = 0; g != NULL && name != NULL && i < g->npol; i++)
		if (strcmp(g->pol[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* A decimal id (uid or gid) 0 to 2^32 - 2: returns 1 and *ID, or 0. */
static int
decimal_id(const char *w, unsigned long long *id)
{
	unsigned long long v = 0;
	size_t n;

	for (n = 0; w[n] >= '0' && w[n] <= '9'; n++)
		if (n < 11)
			v = v * 10 + (unsigned)(w[n] - '0');
	if (n == 0 || w[n] != '\0' || n > 10 || v >= 0xffffffffULL)
		return 0;
	*id = v;
	return 1;
}

/* Does word W (a name or an id) denote ID, called NAME (NULL: none)? */
static int
word_is(const char *w, unsigned long long id, const char *name)
{
	unsigned long long v;

	if (decimal_id(w, &v))
		return v == id;
	return name != NULL && strcmp(w, name) == 0;
}

static int
block_names(const struct gblock *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->nnames; i++)
		if (strcmp(b->names[i], name) == 0)
			return 1;
	return 0;
}

static int
block_admits_user(const struct gblock *b, const struct grant_user *u)
{
	size_t i, k;

	for (i = 0; i < b->nusers; i++)
		if (word_is(b->users[i], u->uid, u->name))
			return 1;
	for (i = 0; i < b->ngroups; i++)
		for (k = 0; k < u->ngids; k++)
			if (word_is(b->groups[i], u->gids[k],
			        u->gnames != NULL ? u->gnames[k] : NULL))
				return 1;
	return 0;
}

int
grant_admits_user(
    const struct grant_set *g, size_t i, const struct grant_user *u)
{
	size_t b;

	if (g == NULL || i >= g->npol || u == NULL)
		return 0;
	for (b = 0; b < g->nblocks; b++)
		if (block_names(&g->blocks[b], g->pol[i].name) &&
		    block_admits_user(&g->blocks[b], u))
			return 1;
	return 0;
}

/* The address of SA as a family (4 or 6) and bytes; IPv4-mapped is 4. */
static int
sockaddr_bytes(const struct sockaddr *sa, uint8_t addr[16])
{
	const struct sockaddr_in6 *s6;

	memset(addr, 0, 16);
	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET) {
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 4;
	}
	if (sa->sa_family != AF_INET6)
		return 0;
	s6 = (const struct sockaddr_in6 *)sa;
	if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memcpy(addr, s6->sin6_addr.s6_addr + 12, 4);
		return 4;
	}
	memcpy(addr, s6->sin6_addr.s6_addr, 16);
	return 6;
}

static int
cidr_holds(const struct gcidr *c, int family, const uint8_t *addr)
{
	unsigned full = c->plen / 8, rest = c->plen % 8;
	uint8_t mask = (uint8_t)(0xff00 >> rest);

	if (c->family != family || memcmp(c->addr, addr, full) != 0)
		return 0;
	return rest == 0 || ((addr[full] ^ c->addr[full]) & mask) == 0;
}

static int
block_from(const struct gblock *b, int family, const uint8_t *addr)
{
	size_t i;

	for (i = 0; family != 0 && i < b->nfrom; i++)
		if (cidr_holds(&b->from[i], family, addr))
			return 1;
	return 0;
}

/* The login USER of block B, or NULL. */
static const struct glogin *
block_login(const struct grant_set *g, size_t b, const char *user)
{
	size_t i;

	for (i = 0; user != NULL && i < g->nlogins; i++)
		if (g->logins[i].block == b &&
		    strcmp(g->logins[i].user, user) == 0)
			return &g->logins[i];
	return NULL;
}

/*
 * Does block B admit the client?  With logins: only one of them, from
 * its `from` blocks when it has any.  Without: its `from` blocks alone
 * (a block with neither is for local users only).
 */
static int
block_admits_client(const struct grant_set *g, size_t b, int family,
    const uint8_t *addr, const char *user, const char **secret)
{
	const struct gblock *blk = &g->blocks[b];
	const struct glogin *l;

	if (blk->nlogins > 0) {
		if ((l = block_login(g, b, user)) == NULL)
			return 0;
		if (blk->nfrom > 0 && !block_from(blk, family, addr))
			return 0;
		*secret = l->secret.name;
		return 1;
	}
	return block_from(blk, family, addr);
}

long
grant_gateway(const struct grant_set *g, const struct sockaddr *sa,
    const char *user, const char **secret)
{
	uint8_t addr[16];
	int family = sockaddr_bytes(sa, addr);
	size_t b;
	long i;

	*secret = NULL;
	for (b = 0; g != NULL && b < g->nblocks; b++) {
		if (g->blocks[b].nnames == 0 ||
		    !block_admits_client(g, b, family, addr, user, secret))
			continue;
		/* A gateway's client gets the first policy its block names. */
		if ((i = grant_find(g, g->blocks[b].names[0])) >= 0)
			return i;
		*secret = NULL;
	}
	return -1;
}

/* --- building (parse.c) and checking (check.c) -------------------------- */

static void
oref_set(struct oref *o, const char *name, const char *file, unsigned line,
    unsigned col, int defines)
{
	o->name = xstrdup(name);
	o->file = xstrdup(file);
	o->ref.name = o->name;
	o->ref.file = o->file;
	o->ref.line = line;
	o->ref.col = col;
	o->ref.defines = defines;
}

static void
push_word(char ***list, size_t *n, const char *w)
{
	*list = xreallocarray(*list, *n + 1, sizeof(**list));
	(*list)[(*n)++] = xstrdup(w);
}

static struct gblock *
last_block(struct grant_set *g)
{
	if (g->nblocks == 0)
		grant_block_open(g);
	return &g->blocks[g->nblocks - 1];
}

void
grant_block_open(struct grant_set *g)
{
	g->blocks =
	    xreallocarray(g->blocks, g->nblocks + 1, sizeof(*g->blocks));
	memset(&g->blocks[g->nblocks++], 0, sizeof(*g->blocks));
}

int
grant_block_policy(struct grant_set *g, const char *name,
    const char *const *files, size_t nfiles, const char *file, unsigned line,
    unsigned col, const char **prev_file, unsigned *prev_line)
{
	struct gblock *b = last_block(g);
	struct gpolicy *p;
	long old;
	size_t i;

	g->refs = xreallocarray(g->refs, g->nrefs + 1, sizeof(*g->refs));
	oref_set(&g->refs[g->nrefs++], name, file, line, col, nfiles > 0);
	if (!block_names(b, name))
		push_word(&b->names, &b->nnames, name);
	if (nfiles == 0)
		return 0;
	if ((old = grant_find(g, name)) >= 0) {
		*prev_file = g->pol[old].file;
		*prev_line = g->pol[old].line;
		return -1;
	}
	g->pol = xreallocarray(g->pol, g->npol + 1, sizeof(*g->pol));
	p = &g->pol[g->npol++];
	memset(p, 0, sizeof(*p));
	p->name = xstrdup(name);
	p->file = xstrdup(file);
	p->line = line;
	for (i = 0; i < nfiles; i++)
		push_word(&p->files, &p->nfiles, files[i]);
	return 0;
}

void
grant_block_user(struct grant_set *g, const char *word)
{
	struct gblock *b = last_block(g);

	push_word(&b->users, &b->nusers, word);
}

void
grant_block_group(struct grant_set *g, const char *word)
{
	struct gblock *b = last_block(g);

	push_word(&b->groups, &b->ngroups, word);
}

int
grant_block_login(struct grant_set *g, const char *user, const char *secret,
    const char *file, unsigned line, unsigned col, const char **prev_file,
    unsigned *prev_line)
{
	struct gblock *b = last_block(g);
	struct glogin *l;
	size_t i;

	for (i = 0; i < g->nlogins; i++)
		if (strcmp(g->logins[i].user, user) == 0) {
			*prev_file = g->logins[i].secret.file;
			*prev_line = g->logins[i].secret.ref.line;
			return -1;
		}
	g->logins = xreallocarray(g->logins, g->nlogins + 1, sizeof(*l));
	l = &g->logins[g->nlogins++];
	l->user = xstrdup(user);
	l->block = g->nblocks - 1;
	oref_set(&l->secret, secret, file, line, col, 0);
	b->nlogins++;
	return 0;
}

void
grant_block_from(
    struct grant_set *g, int family, const uint8_t *addr, unsigned plen)
{
	struct gblock *b = last_block(g);
	struct gcidr *c;

	b->from = xreallocarray(b->from, b->nfrom + 1, sizeof(*b->from));
	c = &b->from[b->nfrom++];
	memset(c, 0, sizeof(*c));
	c->family = family;
	memcpy(c->addr, addr, family == 4 ? 4 : 16);
	c->plen = plen;
}

size_t
grant_ref_count(const struct grant_set *g)
{
	return g == NULL ? 0 : g->nrefs;
}

const struct grant_ref *
grant_ref_at(const struct grant_set *g, size_t i)
{
	return g != NULL && i < g->nrefs ? &g->refs[i].ref : NULL;
}

size_t
grant_login_count(const struct grant_set *g)
{
	return g == NULL ? 0 : g->nlogins;
}

const struct grant_ref *
grant_login_at(const struct grant_set *g, size_t i, const char **user)
{
	if (g == NULL || i >= g->nlogins) {
		*user = NULL;
		return NULL;
	}
	*user = g->logins[i].user;
	return &g->logins[i].secret.ref;
}
