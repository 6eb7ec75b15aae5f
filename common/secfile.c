/*
 * secfile.c: the rule for files that hold secrets (see secfile.h).
 */
#include <sys/stat.h>

#include <unistd.h>

#include "common/secfile.h"

/*
 * What FD really is, after any symlinks: the file must be regular, owned
 * by us or root, readable by its owner alone.
 */
enum secfile
secfile_check(int fd, struct stat *sb)
{
	mode_t mode;

	if (fstat(fd, sb) == -1)
		return SECFILE_STAT;
	mode = sb->st_mode & 07777;
	if (!S_ISREG(sb->st_mode))
		return SECFILE_NOT_REGULAR;
	if (sb->st_uid != getuid() && sb->st_uid != 0)
		return SECFILE_OWNER;
	if ((mode & (S_IRWXG | S_IRWXO)) != 0 || (mode & S_IRUSR) == 0)
		return SECFILE_MODE;
	return SECFILE_OK;
}
