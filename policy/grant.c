/*
 * grant.c: the broker blocks of a configuration (grant.h).
 *
 * SCAFFOLD: the set is always empty until the grammar lands (issue 13).
 */
#include <stdlib.h>

#include "policy/grant.h"

struct grant_set {
	size_t n;
};

struct grant_set *
grant_set_new(void)
{
	return calloc(1, sizeof(struct grant_set));
}

void
grant_set_free(struct grant_set *g)
{
	free(g);
}

size_t
grant_count(const struct grant_set *g)
{
	return g == NULL ? 0 : g->n;
}

const char *
grant_name(const struct grant_set *g, size_t i)
{
	(void)g;
	(void)i;
	return NULL;
}

const char *const *
grant_files(const struct grant_set *g, size_t i, size_t *n)
{
	(void)g;
	(void)i;
	*n = 0;
	return NULL;
}

const char *
grant_where(const struct grant_set *g, size_t i, unsigned *line)
{
	(void)g;
	(void)i;
	*line = 0;
	return NULL;
}

long
grant_find(const struct grant_set *g, const char *name)
{
	(void)g;
	(void)name;
	return -1;
}

int
grant_admits_user(
    const struct grant_set *g, size_t i, const struct grant_user *u)
{
	(void)g;
	(void)i;
	(void)u;
	return 0;
}

long
grant_gateway(const struct grant_set *g, const struct sockaddr *sa,
    const char *user, const char **secret)
{
	(void)g;
	(void)sa;
	(void)user;
	*secret = NULL;
	return -1;
}
