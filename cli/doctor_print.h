/*
 * doctor_print.h: the two forms of pinhole doctor's report, an aligned
 * table under a few lines of context, and a JSON array.
 */
#ifndef PH_DOCTOR_PRINT_H
#define PH_DOCTOR_PRINT_H

#include <stddef.h>
#include <stdio.h>

#include "netns/doctor.h"

/* Prints the kernel release, the uid and any container found, one a line. */
void doctor_print_context(FILE *);

/*
 * Prints RES as an aligned table (feature, works, detail, what to do)
 * followed by a one-line verdict.  Returns 0, or -1 on a write error.
 */
int doctor_print_table(FILE *, const struct doctor_result *, size_t n);

/*
 * Prints RES as a JSON array of {feature, status, detail, advice}
 * objects.  Returns 0, or -1 on a write or memory error.
 */
int doctor_print_json(FILE *, const struct doctor_result *, size_t n);

#endif /* PH_DOCTOR_PRINT_H */
