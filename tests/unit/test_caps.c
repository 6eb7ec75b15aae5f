/*
 * test_caps.c: unit tests of netns/caps.c.
 *
 * Dropping capabilities cannot be undone, so every case runs in a forked
 * child.  A child that first enters a new user namespace holds every
 * capability over it, as root or as nobody, which is where the full drop
 * (bounding set, securebits) can be seen.  The child reads what the
 * kernel says in /proc/self/status; the first failed check ends it with
 * status 1 and one line on stderr naming the check, and the parent
 * asserts status 0.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns/caps.h"
#include "tests/unit/fixture.h"

/*
 * The value of field NAME ("CapEff") in /proc/self/status, read as hex
 * for the capability sets and as decimal otherwise; CHECKs it is there.
 */
static uint64_t
status_field(const char *name)
{
	char line[256];
	size_t len = strlen(name);
	unsigned long long v = 0;
	int found = 0, hex = strncmp(name, "Cap", 3) == 0;
	FILE *f;

	CHECK((f = fopen("/proc/self/status", "re")) != NULL);
	while (!found && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, len) == 0 && line[len] == ':')
			found = sscanf(line + len + 1, hex ? "%llx" : "%llu",
			            &v) == 1;
	fclose(f);
	CHECK(found);
	return v;
}

/* What must hold after a drop in a user namespace, where it may. */
static void
check_all_gone(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	int bits;

	CHECK(status_field("CapEff") == 0);
	CHECK(status_field("CapPrm") == 0);
	CHECK(status_field("CapInh") == 0);
	CHECK(status_field("CapAmb") == 0);
	CHECK(status_field("CapBnd") == 0);
	CHECK(status_field("NoNewPrivs") == 1);
	CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
	CHECK(caps_any() == 0);
	CHECK((bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0)) >= 0);
	CHECK((bits & SECBIT_NOROOT) != 0);
	CHECK((bits & SECBIT_NOROOT_LOCKED) != 0);
	/* Locked means it stays: clearing NOROOT must be refused. */
	CHECK(prctl(PR_SET_SECUREBITS, 0, 0, 0, 0) == -1);
	/* And nothing comes back: raising the permitted set is refused. */
	memset(d, 0xff, sizeof(d));
	CHECK(syscall(SYS_capset, &h, d) == -1 && errno == EPERM);
	CHECK(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 0);
}

static void
enter_userns(void)
{
	CHECK(unshare(CLONE_NEWUSER) == 0);
	/* Every capability over the new namespace, whoever we were. */
	CHECK(caps_any() == 1);
	CHECK(status_field("CapEff") != 0);
	CHECK(status_field("CapBnd") != 0);
}

static void
child_drop_in_userns(void)
{
	char err[256] = "";

	enter_userns();
	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	check_all_gone();
}

static void
test_drop_in_userns(void **state)
{
	(void)state;
	fixture_child_ok(child_drop_in_userns);
}

/* An ambient capability raised before the drop is gone after it. */
static void
child_drop_ambient(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	char err[256] = "";

	enter_userns();
	CHECK(syscall(SYS_capget, &h, d) == 0);
	d[CAP_TO_INDEX(CAP_NET_BIND_SERVICE)].inheritable |=
	    CAP_TO_MASK(CAP_NET_BIND_SERVICE);
	CHECK(syscall(SYS_capset, &h, d) == 0);
	CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE,
	          0, 0) == 0);
	CHECK(status_field("CapAmb") != 0);
	CHECK(status_field("CapInh") != 0);
	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	check_all_gone();
}

static void
test_drop_ambient(void **state)
{
	(void)state;
	fixture_child_ok(child_drop_ambient);
}

/*
 * A second call finds nothing left to drop (no CAP_SETPCAP for the
 * bounding set or the securebits) and must still succeed.
 */
static void
child_drop_twice_userns(void)
{
	char err[256] = "";

	enter_userns();
	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	check_all_gone();
}

static void
test_drop_twice_userns(void **state)
{
	(void)state;
	fixture_child_ok(child_drop_twice_userns);
}

/* A user namespace whose root is the caller (uid and gid mapped). */
static int
map_self(void)
{
	char m[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd, r = -1;

	if (unshare(CLONE_NEWUSER) != 0)
		return -1;
	snprintf(m, sizeof(m), "0 %u 1\n", (unsigned)uid);
	if ((fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	r = write(fd, m, strlen(m)) == (ssize_t)strlen(m) ? 0 : -1;
	close(fd);
	if ((fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC)) >= 0) {
		(void)!write(fd, "deny", 4);
		close(fd);
	}
	snprintf(m, sizeof(m), "0 %u 1\n", (unsigned)gid);
	if (r == 0 &&
	    (fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC)) >= 0) {
		r = write(fd, m, strlen(m)) == (ssize_t)strlen(m) ? 0 : -1;
		close(fd);
	}
	return r;
}

/*
 * caps_file_has: a file capability set in a user namespace of our own
 * (its root may set one on a file it owns), permitted and effective as
 * setcap cap_net_raw=ep writes it; a plain file, a missing one and
 * another capability have none.
 */
static void
child_file_caps(void)
{
	struct vfs_cap_data d;
	char dir[] = "/tmp/test_caps.XXXXXX", f[64], g[64];
	int fd;

	CHECK(map_self() == 0);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(f, sizeof(f), "%s/ping", dir);
	snprintf(g, sizeof(g), "%s/plain", dir);
	CHECK((fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0755)) >= 0);
	close(fd);
	CHECK((fd = open(g, O_WRONLY | O_CREAT | O_CLOEXEC, 0755)) >= 0);
	close(fd);
	memset(&d, 0, sizeof(d));
	d.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
	d.data[0].permitted = 1U << CAP_NET_RAW;
	CHECK(setxattr(f, "security.capability", &d, XATTR_CAPS_SZ_2, 0) == 0);
	CHECK(caps_file_has(f, CAP_NET_RAW) == 1);
	CHECK(caps_file_has(f, CAP_NET_ADMIN) == 0);
	CHECK(caps_file_has(f, CAP_SYSLOG) == 0);
	CHECK(caps_file_has(f, -1) == 0);
	CHECK(caps_file_has(g, CAP_NET_RAW) == 0);
	CHECK(caps_file_has("/nonexistent/ping", CAP_NET_RAW) == 0);
	CHECK(unlink(f) == 0 && unlink(g) == 0 && rmdir(dir) == 0);
}

static void
test_file_caps(void **state)
{
	(void)state;
	fixture_child_ok(child_file_caps);
}

/*
 * In the test's own user namespace: as nobody the first call already
 * finds no capability; as root it drops them all, and the second call
 * is the one without any.
 */
static void
child_drop_twice_here(void)
{
	char err[256] = "";

	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	CHECK(caps_any() == 0);
	CHECK(status_field("CapEff") == 0);
	CHECK(status_field("CapPrm") == 0);
	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	CHECK(caps_any() == 0);
	CHECK(status_field("CapEff") == 0);
	CHECK(status_field("CapPrm") == 0);
	CHECK(status_field("CapInh") == 0);
	CHECK(status_field("CapAmb") == 0);
	CHECK(status_field("NoNewPrivs") == 1);
	if (geteuid() == 0)
		CHECK(status_field("CapBnd") == 0);
}

static void
test_drop_twice_here(void **state)
{
	(void)state;
	fixture_child_ok(child_drop_twice_here);
}

/*
 * uid 0 of the namespace executes a program after the drop: that
 * program, still uid 0, must hold no capability (what the securebits,
 * the bounding set and no_new_privs are there for).  The shell reads its
 * own /proc/self/status with builtins only.
 */
static void
child_exec_as_root(void)
{
	static const char script[] =
	    "while read k v rest; do case $k in "
	    "CapEff:|CapPrm:|CapAmb:|CapInh:) "
	    "[ \"$v\" = 0000000000000000 ] || exit 3;; "
	    "Uid:) [ \"$v\" = 0 ] || exit 4;; "
	    "NoNewPrivs:) [ \"$v\" = 1 ] || exit 5;; "
	    "esac; done </proc/self/status; exit 0";
	char err[256] = "", map[64];
	uid_t uid = geteuid();
	int fd, n;

	CHECK(unshare(CLONE_NEWUSER) == 0);
	n = snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	CHECK((fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC)) >= 0);
	CHECK(write(fd, map, (size_t)n) == n);
	close(fd);
	CHECK(getuid() == 0);
	CHECK(caps_drop_all(err, sizeof(err)) == 0);
	execl("/bin/sh", "sh", "-c", script, (char *)NULL);
	_exit(2);
}

static void
test_exec_as_root(void **state)
{
	int w;

	(void)state;
	w = fixture_in_child(child_exec_as_root);
	assert_true(WIFEXITED(w));
	assert_int_equal(WEXITSTATUS(w), 0);
}

/* Sets the permitted and effective sets to CAP alone (-1: none). */
static void
only_cap(int cap, int effective)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (cap >= 0) {
		d[CAP_TO_INDEX(cap)].permitted = CAP_TO_MASK(cap);
		if (effective)
			d[CAP_TO_INDEX(cap)].effective = CAP_TO_MASK(cap);
	}
	CHECK(syscall(SYS_capset, &h, d) == 0);
}

/*
 * caps_any follows the effective and permitted sets, in both 32-bit
 * words: CAP_SYSLOG (34) lies in the second.  Each case in its own
 * child, since a capability given up is gone.
 */
static void
child_any_low_permitted(void)
{
	enter_userns();
	only_cap(CAP_KILL, 0);
	CHECK(caps_any() == 1);
	only_cap(-1, 0);
	CHECK(caps_any() == 0);
}

static void
child_any_high_permitted(void)
{
	enter_userns();
	only_cap(CAP_SYSLOG, 0);
	CHECK(caps_any() == 1);
}

static void
child_any_high_effective(void)
{
	enter_userns();
	only_cap(CAP_SYSLOG, 1);
	CHECK(caps_any() == 1);
}

static void
child_any(void)
{
	fixture_child_ok(child_any_low_permitted);
	fixture_child_ok(child_any_high_permitted);
	fixture_child_ok(child_any_high_effective);
}

static void
test_any(void **state)
{
	(void)state;
	child_any();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drop_in_userns),
	    cmocka_unit_test(test_drop_ambient),
	    cmocka_unit_test(test_drop_twice_userns),
	    cmocka_unit_test(test_drop_twice_here),
	    cmocka_unit_test(test_file_caps),
	    cmocka_unit_test(test_exec_as_root),
	    cmocka_unit_test(test_any),
	};

	return cmocka_run_group_tests_name("caps", tests, NULL, NULL);
}
