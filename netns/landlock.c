/*
 * landlock.c: Landlock rulesets, best effort on every ABI, as the kernel's
 * samples/landlock/sandboxer.c does it.
 *
 * glibc has no wrappers, so the three system calls go through syscall(2),
 * and the constants that Debian 12's <linux/landlock.h> lacks (TRUNCATE,
 * IOCTL_DEV, the scopes) are defined here.  The ruleset attribute is our
 * own struct with every field up to ABI 6: the kernel takes the size we
 * pass and accepts trailing fields it does not know as long as they are
 * zero, which they are once mask_abi() has cleared what the running ABI
 * lacks.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/landlock.h>

#define LL_INTERNAL
#include "landlock.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1) /* ABI 6 */
#endif

#define FS(r) LANDLOCK_ACCESS_FS_##r
#define ACCESS_READ (FS(READ_FILE) | FS(READ_DIR))
#define ACCESS_WRITE                                                           \
	(FS(WRITE_FILE) | FS(REMOVE_DIR) | FS(REMOVE_FILE) | FS(MAKE_CHAR) |   \
	    FS(MAKE_DIR) | FS(MAKE_REG) | FS(MAKE_SOCK) | FS(MAKE_FIFO) |      \
	    FS(MAKE_BLOCK) | FS(MAKE_SYM) | FS(REFER) | FS(TRUNCATE))
#define ACCESS_DEV (FS(WRITE_FILE) | FS(IOCTL_DEV))
#define ACCESS_ALL (ACCESS_READ | ACCESS_WRITE | FS(EXECUTE) | ACCESS_DEV)
/* The only rights the kernel takes on a rule for a file, not a directory. */
#define ACCESS_FILE                                                            \
	(FS(EXECUTE) | FS(WRITE_FILE) | FS(READ_FILE) | FS(TRUNCATE) |         \
	    FS(IOCTL_DEV))
#define LL_ALL (LL_READ | LL_WRITE | LL_EXEC | LL_DEV)

/* struct landlock_ruleset_attr as of ABI 6. */
struct ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4; never set here */
	uint64_t scoped; /* ABI 6 */
};

struct rule {
	char *path;
	unsigned what;
};

struct ll_rules {
	enum ll_mode mode;
	int abi;
	int probe_errno; /* why abi is 0 */
	struct rule *rules;
	size_t n, cap;
};

/* What ll_apply() got done, for its report. */
struct tally {
	size_t added, skipped;
	const char *path; /* the path that failed */
	const char *step; /* the call that failed */
	int err;
};

static int
create_ruleset(const struct ruleset_attr *a, size_t size, uint32_t flags)
{
	return (int)syscall(SYS_landlock_create_ruleset, a, size, flags);
}

/* Returns the ABI, or 0 with the reason in *ERR. */
static int
probe(int *err)
{
	int abi;

	*err = 0;
	abi = create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		*err = abi < 0 ? errno : 0;
		abi = 0;
	}
	return abi;
}

int
ll_abi(void)
{
	int err;

	return probe(&err);
}

struct ll_rules *
ll_new_abi(enum ll_mode mode, int abi)
{
	struct ll_rules *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->mode = mode;
	r->abi = abi;
	return r;
}

struct ll_rules *
ll_new(enum ll_mode mode)
{
	struct ll_rules *r;
	int err, abi = probe(&err);

	if ((r = ll_new_abi(mode, abi)) != NULL)
		r->probe_errno = err;
	return r;
}

int
ll_allow(struct ll_rules *r, const char *path, unsigned what)
{
	struct rule *n;
	size_t cap;

	if (what == 0 || (what & ~LL_ALL) != 0) {
		errno = EINVAL;
		return -1;
	}
	if (r->n == r->cap) {
		cap = r->cap == 0 ? 16 : r->cap * 2;
		if ((n = reallocarray(r->rules, cap, sizeof(*n))) == NULL)
			return -1;
		r->rules = n;
		r->cap = cap;
	}
	if ((r->rules[r->n].path = strdup(path)) == NULL)
		return -1;
	r->rules[r->n++].what = what;
	return 0;
}

void
ll_free(struct ll_rules *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n; i++)
		free(r->rules[i].path);
	free(r->rules);
	free(r);
}

/*
 * Clears what ABI lacks, as the switch in sandboxer.c does.  Before ABI 2
 * the kernel refuses every cross-directory rename and link (EXDEV)
 * whatever the ruleset says: REFER is implicitly handled and cannot be
 * granted.
 */
static void
mask_abi(struct ruleset_attr *a, int abi)
{
	if (abi < 2)
		a->handled_access_fs &= ~FS(REFER);
	if (abi < 3)
		a->handled_access_fs &= ~FS(TRUNCATE);
	if (abi < 4)
		a->handled_access_net = 0;
	if (abi < 5)
		a->handled_access_fs &= ~FS(IOCTL_DEV);
	if (abi < 6)
		a->scoped = 0;
}

static void
ruleset_for(struct ruleset_attr *a, enum ll_mode mode, int abi)
{
	memset(a, 0, sizeof(*a));
	if (mode == LL_SANDBOX) {
		a->handled_access_fs = ACCESS_WRITE | ACCESS_DEV;
		a->scoped =
		    LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	} else if (mode == LL_SCOPE) {
		/*
		 * Every layer denies REFER unless a rule grants it, handled
		 * or not (the kernel's "initially denied" right), as soon as
		 * any layer of the domain handles file rights: a layer of
		 * scopes alone would forbid every cross-directory rename and
		 * link once the command's layer is nested in it (rustc's
		 * .rmeta, os.rename: EXDEV).  So it handles REFER, and
		 * ll_apply() grants it beneath "/".
		 */
		a->handled_access_fs = FS(REFER);
		a->scoped =
		    LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	} else
		a->handled_access_fs = ACCESS_ALL;
	mask_abi(a, abi);
}

/* The Landlock rights for WHAT on a directory or a file. */
static uint64_t
rights(unsigned what, int isdir)
{
	uint64_t r = 0;

	if (what & LL_READ)
		r |= ACCESS_READ;
	if (what & LL_WRITE)
		r |= ACCESS_WRITE;
	if (what & LL_EXEC)
		r |= FS(EXECUTE);
	if (what & LL_DEV)
		r |= ACCESS_DEV;
	return isdir ? r : r & ACCESS_FILE;
}

/*
 * Adds the rule for RU to ruleset RFD, which handles HANDLED, and counts
 * it in T.  Returns 0, or -1 with the failing call in T.
 */
static int
add_rule(int rfd, const struct rule *ru, uint64_t handled, struct tally *t)
{
	struct landlock_path_beneath_attr pb = {.parent_fd = -1};
	struct stat st;
	int ret = -1;

	t->path = ru->path;
	t->step = "open";
	if ((pb.parent_fd = open(ru->path, O_PATH | O_CLOEXEC)) == -1) {
		if (errno == ENOENT || errno == ENOTDIR) {
			t->skipped++;
			ret = 0;
		}
		goto out;
	}
	t->step = "stat";
	if (fstat(pb.parent_fd, &st) == -1)
		goto out;
	/* Rights this ruleset does not handle would be EINVAL. */
	pb.allowed_access = rights(ru->what, S_ISDIR(st.st_mode)) & handled;
	ret = 0;
	if (pb.allowed_access == 0)
		goto out;
	t->step = "landlock_add_rule";
	ret = (int)syscall(
	    SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	if (ret == 0)
		t->added++;
out:
	if (ret == -1)
		t->err = errno;
	if (pb.parent_fd != -1)
		close(pb.parent_fd);
	return ret;
}

/* Makes ruleset RFD with R's rules the calling thread's.  0 or -1. */
static int
restrict_self(
    const struct ll_rules *r, int rfd, uint64_t handled, struct tally *t)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < r->n && ret == 0; i++)
		ret = add_rule(rfd, &r->rules[i], handled, t);
	if (ret == -1)
		goto out;
	t->path = NULL;
	t->step = "prctl(PR_SET_NO_NEW_PRIVS)";
	if ((ret = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) == -1)
		goto out;
	t->step = "landlock_restrict_self";
	ret = (int)syscall(SYS_landlock_restrict_self, rfd, 0);
out:
	if (ret == -1 && t->path == NULL) /* add_rule() keeps its own */
		t->err = errno;
	return ret;
}

static void
report_unavailable(const struct ll_rules *r, char *buf, size_t len)
{
	const char *why;

	switch (r->probe_errno) {
	case ENOSYS:
		why = "kernel has no Landlock";
		break;
	case EOPNOTSUPP:
		why = "disabled: add landlock to the lsm= boot option";
		break;
	case 0:
		why = "ABI 0";
		break;
	default:
		why = strerror(r->probe_errno);
		break;
	}
	snprintf(buf, len,
	    "landlock: not available (%s); the mount view still applies "
	    "(/, /proc/sys and the rest read-only)",
	    why);
}

static void
report_applied(const struct ll_rules *r, const struct ruleset_attr *a,
    const struct tally *t, char *buf, size_t len)
{
	const char *what = "file access", *scoped = "", *abi1 = "";

	if (r->mode == LL_SCOPE) {
		snprintf(buf, len,
		    "landlock: ABI %d, PID 1 scoped: abstract-unix-socket, "
		    "signal",
		    r->abi);
		return;
	}
	if (r->mode == LL_SANDBOX) {
		what = "writes";
		scoped = a->scoped != 0
		    ? ", scoped: abstract-unix-socket, signal"
		    : ", scoped: none";
	}
	if (r->abi == 1)
		abi1 = "; no cross-directory rename or link anywhere";
	snprintf(buf, len,
	    "landlock: ABI %d, %s limited to %zu path%s (%zu skipped)%s%s",
	    r->abi, what, t->added, t->added == 1 ? "" : "s", t->skipped,
	    scoped, abi1);
}

static void
report_failure(const struct tally *t, char *buf, size_t len)
{
	if (t->path != NULL)
		snprintf(buf, len, "landlock: %s: %s: %s", t->path, t->step,
		    strerror(t->err));
	else
		snprintf(
		    buf, len, "landlock: %s: %s", t->step, strerror(t->err));
}

int
ll_apply(struct ll_rules *r, char *report, size_t reportlen)
{
	struct ruleset_attr a;
	struct tally t = {.step = "landlock_create_ruleset"};
	int rfd = -1, ret = -1;

	if (r->abi < 1) {
		report_unavailable(r, report, reportlen);
		return 0;
	}
	ruleset_for(&a, r->mode, r->abi);
	if (r->mode == LL_SCOPE && a.scoped == 0) {
		/* Before ABI 6 there is nothing to scope; the netns is. */
		snprintf(report, reportlen,
		    "landlock: ABI %d has no scopes; abstract sockets are "
		    "limited by the network namespace alone",
		    r->abi);
		return 0;
	}
	/* PID 1's layer takes no right but REFER, given everywhere. */
	if (r->mode == LL_SCOPE && (a.handled_access_fs & FS(REFER)) != 0 &&
	    ll_allow(r, "/", LL_WRITE) != 0) {
		t.err = errno;
		goto out;
	}
	if ((rfd = create_ruleset(&a, sizeof(a), 0)) == -1) {
		t.err = errno;
		goto out;
	}
	ret = restrict_self(r, rfd, a.handled_access_fs, &t);
out:
	if (ret == 0)
		report_applied(r, &a, &t, report, reportlen);
	else
		report_failure(&t, report, reportlen);
	if (rfd != -1)
		close(rfd);
	return ret;
}
