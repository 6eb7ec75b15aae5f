/*
 * fd.h: descriptor helpers shared by the modules.
 */
#ifndef PH_FD_H
#define PH_FD_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads FD until end of file or until CAP bytes are in P, retrying on
 * EINTR.  Returns the number of bytes read, or -1 with errno set.
 */
ssize_t fd_read_all(int fd, void *p, size_t cap);

#endif /* PH_FD_H */
