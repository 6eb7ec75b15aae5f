/*
 * fixture.h: what several unit tests need and used to copy: a scratch
 * directory under $TMPDIR (or /tmp) and its removal, files written into
 * it, and a policy loaded from a string with its secrets' values.  Linked
 * into every unit test (ph_unit_test in CMakeLists.txt).
 */
#ifndef PH_TEST_FIXTURE_H
#define PH_TEST_FIXTURE_H

#include <stddef.h>

struct policy;

/*
 * Makes a new directory NAME.XXXXXX under $TMPDIR (or /tmp) and writes its
 * path into DIR (LEN bytes).  Returns 0, or -1 (for cmocka's setup).
 */
int fixture_tmpdir(char *dir, size_t len, const char *name);

/*
 * Removes DIR and everything below it, each entry made writable first
 * (a test may leave one that is not).  Returns nftw's result.
 */
int fixture_rmtree(const char *dir);

/* Writes TEXT to PATH (created or truncated); fails the test if it can't. */
void fixture_write_file(const char *path, const char *text);

/*
 * Loads the policy TEXT (named "p.conf" in messages) and, with SECRETS,
 * its secrets' values; an error fails the test, after printing what the
 * parser said.
 */
struct policy *fixture_policy(const char *text, int secrets);

#endif /* PH_TEST_FIXTURE_H */
