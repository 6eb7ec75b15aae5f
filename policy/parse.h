/*
 * parse.h: the policy language's lexer and parser.  It fills a policy
 * through the POLICY_INTERNAL interface and records every diagnostic
 * there.  parse.c also loads policies (policy_load*, declared in
 * policy.h): parse, build the index (match.c), run the second pass
 * (check.c), report.
 */
#ifndef PH_PARSE_H
#define PH_PARSE_H

#include <stddef.h>

struct policy;
struct parse_state;

/* Returns parser state for one policy (include stack, files seen). */
struct parse_state *parse_state_new(struct policy *);
void parse_state_free(struct parse_state *);

/* Parses the file at PATH, following its includes. */
void parse_file(struct parse_state *, const char *path);

/* Parses TEXT as if it were the file NAME. */
void parse_buffer(
    struct parse_state *, const char *name, const char *text, size_t len);

/* Keywords, sorted: exposed so a unit test can check the order. */
extern const char *const parse_keywords[];
extern const size_t parse_nkeywords;
extern const char *const parse_options[];
extern const size_t parse_noptions;

/* Edit distance between A and B, capped at 3 (for "did you mean"). */
unsigned parse_distance(const char *a, const char *b);

#endif
