/*
 * caps.c: dropping capabilities without libcap: capset(2) and prctl(2).
 *
 * Order matters.  The securebits and the bounding set need CAP_SETPCAP,
 * so they go first; capset to nothing comes last.  With SECBIT_NOROOT
 * locked, uid 0 gets no capabilities back from execve, which is what keeps
 * root inside the sandbox (or a root proxy) from undoing any of this.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "netns/caps.h"

#define SECBITS_ALL                                                            \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |       \
	    SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |          \
	    SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

static int
last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int n = -1;

	if (f != NULL) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	/* Without /proc, try them all: PR_CAPBSET_DROP says EINVAL past it. */
	return n >= 0 ? n : 63;
}

static int
capget_now(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};

	return (int)syscall(SYS_capget, &h, d);
}

int
caps_any(void)
{
	struct __user_cap_data_struct d[2];

	if (capget_now(d) != 0)
		return 1; /* cannot tell: assume the worse */
	return d[0].effective != 0 || d[1].effective != 0 ||
	    d[0].permitted != 0 || d[1].permitted != 0;
}

static int
have_setpcap(void)
{
	struct __user_cap_data_struct d[2];

	return capget_now(d) == 0 &&
	    (d[CAP_TO_INDEX(CAP_SETPCAP)].effective &
	        CAP_TO_MASK(CAP_SETPCAP)) != 0;
}

/* The bounding set, then the securebits: both need CAP_SETPCAP. */
static int
drop_bounding(char *err, size_t errlen)
{
	int c, last = last_cap();

	for (c = 0; c <= last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 &&
		    errno != EINVAL) {
			ph_errf(err, errlen, "drop capability %d: %s", c,
			    strerror(errno));
			return -1;
		}
	if (prctl(PR_SET_SECUREBITS, SECBITS_ALL, 0, 0, 0) != 0) {
		ph_errf(err, errlen, "lock securebits: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
caps_drop_all(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	int r = -1;

	memset(d, 0, sizeof(d));
	/* Ambient capabilities are gone with the permitted set anyway. */
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (have_setpcap() && drop_bounding(err, errlen) != 0)
		goto out;
	if (syscall(SYS_capset, &h, d) != 0) {
		ph_errf(err, errlen, "capset: %s", strerror(errno));
		goto out;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		ph_errf(err, errlen, "no_new_privs: %s", strerror(errno));
		goto out;
	}
	r = 0;
out:
	return r;
}

int
caps_file_has(const char *path, int cap)
{
	struct vfs_ns_cap_data d; /* the largest revision; v2 is a prefix */
	unsigned idx = (unsigned)cap / 32, bit = 1U << ((unsigned)cap % 32);
	uint32_t rev;
	ssize_t n;

	memset(&d, 0, sizeof(d));
	if (cap < 0 || idx >= VFS_CAP_U32 ||
	    (n = getxattr(path, "security.capability", &d, sizeof(d))) <
	        (ssize_t)sizeof(d.magic_etc))
		return 0;
	rev = le32toh(d.magic_etc) & VFS_CAP_REVISION_MASK;
	if (rev == VFS_CAP_REVISION_1 && idx > 0)
		return 0;
	if ((rev == VFS_CAP_REVISION_1 && n < (ssize_t)XATTR_CAPS_SZ_1) ||
	    (rev == VFS_CAP_REVISION_2 && n < (ssize_t)XATTR_CAPS_SZ_2) ||
	    (rev == VFS_CAP_REVISION_3 && n < (ssize_t)XATTR_CAPS_SZ_3) ||
	    (rev != VFS_CAP_REVISION_1 && rev != VFS_CAP_REVISION_2 &&
	        rev != VFS_CAP_REVISION_3))
		return 0;
	return (le32toh(d.data[idx].permitted | d.data[idx].inheritable) &
	           bit) != 0;
}
