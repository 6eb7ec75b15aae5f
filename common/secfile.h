/*
 * secfile.h: the rule for files that hold secrets (secret files of the
 * policy, the CA key), as OpenSSH's check_file_secrecy: one result per
 * way a file can be wrong, and the caller turns it into words.
 */
#ifndef PH_SECFILE_H
#define PH_SECFILE_H

#include <sys/stat.h>

/* What secfile_check() found. */
enum secfile {
	SECFILE_OK,
	SECFILE_STAT, /* fstat failed: errno */
	SECFILE_NOT_REGULAR,
	SECFILE_OWNER, /* neither the real uid nor root */
	SECFILE_MODE, /* group or others may access it, or not readable */
};

/*
 * FD, opened from the file, is a regular file owned by the real uid or
 * root that only its owner can read.  Fills *SB (but after SECFILE_STAT).
 * Callers build their own message from the result and *SB.
 */
enum secfile secfile_check(int fd, struct stat *sb);

#endif /* PH_SECFILE_H */
