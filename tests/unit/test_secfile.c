/*
 * test_secfile.c: the rule for secret files, one result per way a file
 * can be wrong: not regular, someone else's (as root only), readable by
 * others, unreadable by its owner.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/secfile.h"

struct fixture {
	char dir[64];
	char file[96];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%.40s/secfile.XXXXXX",
	    tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->file, sizeof(f->file), "%s/key", f->dir);
	if ((fd = open(f->file, O_WRONLY | O_CREAT | O_EXCL, 0600)) == -1)
		return -1;
	close(fd);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->file);
	rmdir(f->dir);
	free(f);
	return 0;
}

static enum secfile
check_path(const char *path)
{
	struct stat sb;
	enum secfile r;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	r = secfile_check(fd, &sb);
	close(fd);
	return r;
}

static void
test_modes(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(check_path(f->file), SECFILE_OK);
	assert_int_equal(chmod(f->file, 0400), 0);
	assert_int_equal(check_path(f->file), SECFILE_OK);
	assert_int_equal(chmod(f->file, 0640), 0);
	assert_int_equal(check_path(f->file), SECFILE_MODE);
	assert_int_equal(chmod(f->file, 0604), 0);
	assert_int_equal(check_path(f->file), SECFILE_MODE);
	assert_int_equal(chmod(f->file, 0600), 0);
	assert_int_equal(check_path(f->dir), SECFILE_NOT_REGULAR);
}

static void
test_stat_fails(void **state)
{
	struct stat sb;

	(void)state;
	assert_int_equal(secfile_check(-1, &sb), SECFILE_STAT);
}

static void
test_owner(void **state)
{
	struct fixture *f = *state;

	if (geteuid() != 0) {
		print_message("skipped: only root can give a file away\n");
		skip();
		return;
	}
	assert_int_equal(chown(f->file, 65534, 65534), 0);
	assert_int_equal(check_path(f->file), SECFILE_OWNER);
	assert_int_equal(chown(f->file, 0, 0), 0);
	assert_int_equal(check_path(f->file), SECFILE_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stat_fails, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
