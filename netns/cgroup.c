/*
 * cgroup.c: the sandbox's own cgroup (see cgroup.h).
 *
 * cgroup v2 lets no cgroup but the root hold processes and hand a
 * controller to a child: memory (a domain controller) cannot be enabled
 * there, and pids (a threaded one) can, but then makes the cgroup a
 * thread root whose domain children cannot take a process.  pinhole run
 * sits in its own cgroup.  So, as systemd's delegation asks of a
 * delegate, when pinhole run is the only process there (a scope of its
 * own, e.g. systemd-run --user --scope -p Delegate=yes) it moves itself
 * into a leaf beside the sandbox's, NAME-run, enables the controllers,
 * and after the run puts everything back as it was.  In cgroup v1 every
 * hierarchy lets a writable cgroup have children.
 *
 * The sandbox cannot raise its limits: it sees /sys read-only, holds no
 * capability, and its cgroup namespace (sandbox.c) is rooted at this
 * cgroup, so /proc/self/cgroup inside says "/" and nothing of the host.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <linux/close_range.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "netns/cgroup.h"

#define FILE_MAX 65536 /* the most read of cgroup.procs or mountinfo */
#define REMOVE_TRIES 200 /* rmdir attempts, 5 ms apart: 1 s at most */
#define REMOVE_PAUSE_NS 5000000L

struct node {
	char dir[PATH_MAX]; /* the run's cgroup */
	char parent[PATH_MAX]; /* the caller's */
	int version;
	unsigned ctrls; /* 1 << enum cgroup_ctrl */
	int made; /* the directory exists: remove it */
	/* v2, pinhole run alone in the parent (see the top): */
	int move; /* move it into RUN */
	char run[PATH_MAX]; /* its leaf */
	pid_t self; /* pinhole run */
	int moved; /* it is in RUN: move it back, remove RUN */
	unsigned enabled; /* controllers enabled here: disable them after */
};

struct cgroup {
	struct node n[CGROUP_NCTRL];
	int nn;
	unsigned asked; /* 1 << enum cgroup_ctrl: a limit was given */
	pid_t keeper; /* 0: none */
	int keeper_fd; /* its pipe; end of file: remove */
};

static const char *const names[CGROUP_NCTRL] = {"pids", "memory"};

const char *
cgroup_ctrl_name(enum cgroup_ctrl c)
{
	return c < CGROUP_NCTRL ? names[c] : "?";
}

/* --- parsing -------------------------------------------------------------- */

/* Whether the comma-separated list at LIST (LEN bytes) holds WORD. */
static int
in_list(const char *list, size_t len, const char *word)
{
	const char *p = list, *end = list + len, *comma;
	size_t w = strlen(word);

	while (p < end) {
		if ((comma = memchr(p, ',', (size_t)(end - p))) == NULL)
			comma = end;
		if ((size_t)(comma - p) == w && memcmp(p, word, w) == 0)
			return 1;
		p = comma + 1;
	}
	return 0;
}

/* A cgroup path as the kernel gives it: absolute, no "..". */
static int
path_ok(const char *p)
{
	return p[0] == '/' && strstr(p, "/../") == NULL &&
	    (strlen(p) < 3 || strcmp(p + strlen(p) - 3, "/..") != 0);
}

int
cgroup_proc_path(const char *text, const char *ctrl, char *out, size_t len)
{
	const char *line, *eol, *c1, *c2;
	int r = -1;

	for (line = text; r != 0 && *line != '\0';
	     line = *eol != '\0' ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		if ((c1 = memchr(line, ':', (size_t)(eol - line))) == NULL ||
		    (c2 = memchr(c1 + 1, ':', (size_t)(eol - c1 - 1))) == NULL)
			continue;
		if (ctrl == NULL
		        ? c1 - line == 1 && line[0] == '0' && c2 == c1 + 1
		        : in_list(c1 + 1, (size_t)(c2 - c1 - 1), ctrl))
			r = (size_t)(eol - c2 - 1) < len &&
			        snprintf(out, len, "%.*s", (int)(eol - c2 - 1),
			            c2 + 1) >= 0 &&
			        path_ok(out)
			    ? 0
			    : -2;
	}
	return r == 0 ? 0 : -1;
}

/* mountinfo's octal escapes (\040 for a space) undone, in place. */
static void
unescape(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++, o++)
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
			    (s[3] - '0'));
			s += 3;
		} else
			*o = *s;
	*o = '\0';
}

/*
 * One mountinfo line, split: its root, mount point, file system type and
 * super options.  Returns 0, or -1 when it is not a line of that shape.
 */
struct mline {
	char *root, *point, *type, *opts;
};

static int
split_mline(char *line, struct mline *m)
{
	char *f[64], *save = NULL, *t;
	int n = 0, dash = -1;

	for (t = strtok_r(line, " ", &save); t != NULL && n < 64;
	     t = strtok_r(NULL, " ", &save)) {
		if (n >= 6 && dash < 0 && strcmp(t, "-") == 0)
			dash = n;
		f[n++] = t;
	}
	if (dash < 0 || n < dash + 4)
		return -1;
	m->root = f[3];
	m->point = f[4];
	m->type = f[dash + 1];
	m->opts = f[dash + 3];
	unescape(m->root);
	unescape(m->point);
	return 0;
}

/* The directory of CGPATH in mount M, if M holds it.  Returns 0 or -1. */
static int
dir_in_mount(const struct mline *m, const char *cgpath, char *out, size_t len)
{
	size_t rl = strlen(m->root);
	const char *rel = cgpath;
	int n;

	if (strcmp(m->root, "/") != 0) {
		if (strncmp(cgpath, m->root, rl) != 0 ||
		    (cgpath[rl] != '/' && cgpath[rl] != '\0'))
			return -1;
		rel = cgpath + rl;
	}
	if (strcmp(rel, "/") == 0)
		rel = "";
	n = snprintf(out, len, "%s%s", m->point, rel);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

static int
mount_matches(const struct mline *m, const char *ctrl)
{
	if (ctrl == NULL)
		return strcmp(m->type, "cgroup2") == 0;
	return strcmp(m->type, "cgroup") == 0 &&
	    in_list(m->opts, strlen(m->opts), ctrl);
}

int
cgroup_mount_dir(const char *mountinfo, const char *ctrl, const char *cgpath,
    char *out, size_t len)
{
	const char *line, *eol;
	struct mline m;
	char *copy;
	int r = -1;

	for (line = mountinfo; r != 0 && *line != '\0';
	     line = *eol != '\0' ? eol + 1 : eol) {
		eol = strchrnul(line, '\n');
		copy = xstrndup(line, (size_t)(eol - line));
		if (split_mline(copy, &m) == 0 && mount_matches(&m, ctrl))
			r = dir_in_mount(&m, cgpath, out, len);
		free(copy);
	}
	return r;
}

/* --- looking ---------------------------------------------------------------- */

/* Reads file DIR/NAME, at most FILE_MAX bytes.  Returns it, or NULL. */
static char *
read_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 64], *buf = NULL;
	ssize_t n;
	size_t got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s%s%s", dir, *name ? "/" : "", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	buf = xmalloc(FILE_MAX + 1);
	while (got < FILE_MAX &&
	    ((n = read(fd, buf + got, FILE_MAX - got)) > 0 ||
	        (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	buf[got] = '\0';
	close(fd);
	return buf;
}

/* Whether DIR/NAME is writable; otherwise says why in WHY. */
static int
writable(const char *dir, const char *name, char *why, size_t len)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s%s%s", dir, *name ? "/" : "", name);
	if (access(path, W_OK) == 0)
		return 1;
	ph_errf(why, len, "%s: %s", path, strerror(errno));
	return 0;
}

/* Whether the word list in file DIR/NAME (space-separated) holds WORD. */
static int
file_lists(const char *dir, const char *name, const char *word)
{
	char *text = read_file(dir, name), *t, *save = NULL;
	int r = 0;

	for (t = text ? strtok_r(text, " \n", &save) : NULL; t && !r;
	     t = strtok_r(NULL, " \n", &save))
		r = strcmp(t, word) == 0;
	free(text);
	return r;
}

/* Whether file DIR/NAME holds nothing but white space. */
static int
file_empty(const char *dir, const char *name)
{
	char *text = read_file(dir, name);
	int r = text != NULL && strspn(text, " \n") == strlen(text);

	free(text);
	return r;
}

/* Whether DIR/cgroup.procs lists this process and no other. */
static int
alone_in(const char *dir)
{
	char *text = read_file(dir, "cgroup.procs"), me[32];
	int r;

	snprintf(me, sizeof(me), "%d\n", (int)getpid());
	r = text != NULL && strcmp(text, me) == 0;
	free(text);
	return r;
}

/*
 * The root cgroup, the one exempt from the no-internal-process rule, has
 * no cgroup.type; the root of a cgroup namespace (a container's "0::/")
 * has one, and is bound by the rule.
 */
static int
is_root(const char *dir)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/cgroup.type", dir);
	return access(path, F_OK) != 0 && errno == ENOENT;
}

/*
 * cgroup v2: whether the caller's cgroup DIR can hold C's child: 1, or 2
 * once pinhole run has moved itself into a leaf; 0: no.
 */
static int
v2_usable(const char *dir, enum cgroup_ctrl c, char *why, size_t len)
{
	if (!file_lists(dir, "cgroup.controllers", names[c])) {
		ph_errf(why, len, "v2: %s not in %s/cgroup.controllers",
		    names[c], dir);
		return 0;
	}
	if (!writable(dir, "", why, len) ||
	    !writable(dir, "cgroup.procs", why, len) ||
	    !writable(dir, "cgroup.subtree_control", why, len))
		return 0;
	/* The no-internal-process rule (see the top). */
	if (is_root(dir))
		return 1;
	/* With its process and a controller on, a thread root (see the top). */
	if (alone_in(dir) && file_empty(dir, "cgroup.subtree_control"))
		return 2;
	if (alone_in(dir)) {
		ph_errf(why, len,
		    "v2: %s/cgroup.subtree_control has controllers on while "
		    "pinhole is in it, so no child of it can take a process",
		    dir);
		return 0;
	}
	ph_errf(why, len,
	    "v2: %s holds processes besides pinhole, and a cgroup with "
	    "processes can give no child a controller: run pinhole in a "
	    "cgroup of its own",
	    dir);
	return 0;
}

static void
find_v2(const char *proc, const char *mi, enum cgroup_ctrl c,
    struct cgroup_where *w)
{
	char path[PATH_MAX], dir[PATH_MAX];

	if (cgroup_proc_path(proc, NULL, path, sizeof(path)) != 0 ||
	    cgroup_mount_dir(mi, NULL, path, dir, sizeof(dir)) != 0) {
		ph_errf(w->why[c], sizeof(w->why[c]), "v2: not mounted");
		return;
	}
	if ((w->move[c] = v2_usable(dir, c, w->why[c], sizeof(w->why[c]))) !=
	    0) {
		w->move[c] = w->move[c] == 2;
		w->version[c] = 2;
		snprintf(w->dir[c], sizeof(w->dir[c]), "%s", dir);
	}
}

static void
find_v1(const char *proc, const char *mi, enum cgroup_ctrl c,
    struct cgroup_where *w)
{
	char path[PATH_MAX], dir[PATH_MAX], why[256];
	size_t l = strlen(w->why[c]);

	if (cgroup_proc_path(proc, names[c], path, sizeof(path)) != 0 ||
	    cgroup_mount_dir(mi, names[c], path, dir, sizeof(dir)) != 0)
		ph_errf(why, sizeof(why), "no v1 %s hierarchy", names[c]);
	else if (writable(dir, "", why, sizeof(why)) &&
	    writable(dir, "cgroup.procs", why, sizeof(why))) {
		w->version[c] = 1;
		snprintf(w->dir[c], sizeof(w->dir[c]), "%s", dir);
		return;
	}
	snprintf(
	    w->why[c] + l, sizeof(w->why[c]) - l, "%s%s", l ? "; " : "", why);
}

void
cgroup_find(const char *proc, const char *mi, struct cgroup_where *w)
{
	int c;

	memset(w, 0, sizeof(*w));
	for (c = 0; c < CGROUP_NCTRL; c++) {
		find_v2(proc, mi, (enum cgroup_ctrl)c, w);
		if (w->version[c] == 0)
			find_v1(proc, mi, (enum cgroup_ctrl)c, w);
		if (w->version[c] != 0)
			w->why[c][0] = '\0';
	}
}

void
cgroup_find_self(struct cgroup_where *w)
{
	char *proc = read_file("/proc/self/cgroup", "");
	char *mi = read_file("/proc/self/mountinfo", "");
	int c;

	if (proc != NULL && mi != NULL)
		cgroup_find(proc, mi, w);
	else {
		memset(w, 0, sizeof(*w));
		for (c = 0; c < CGROUP_NCTRL; c++)
			ph_errf(w->why[c], sizeof(w->why[c]),
			    "/proc/self/cgroup or mountinfo unreadable");
	}
	free(proc);
	free(mi);
}

/* --- making ----------------------------------------------------------------- */

/* Writes TEXT to DIR/NAME.  Returns 0, or -1 with the file in ERR. */
static int
put(const char *dir, const char *name, const char *text, char *err,
    size_t errlen)
{
	char path[PATH_MAX + 64];
	size_t n = strlen(text);
	int fd, r = -1, e;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/*
	 * O_CREAT: cgroupfs makes its files itself (and refuses to create
	 * others), a test's fake tree needs them made.  No O_TRUNC: cgroupfs
	 * takes each write whole.
	 */
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0) {
		if (write(fd, text, n) == (ssize_t)n)
			r = 0;
		if (close(fd) != 0)
			r = -1;
	}
	if (r != 0) {
		e = errno;
		ph_errf(err, errlen, "cgroup: %s: %s", path, strerror(e));
		errno = e;
	}
	return r;
}

/* Like put, but a file this kernel lacks (ENOENT) is no failure. */
static int
put_if_there(const char *dir, const char *name, const char *text, char *err,
    size_t errlen)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	return put(dir, name, text, err, errlen);
}

/* cgroup v2: C enabled for the children of the caller's cgroup. */
static int
enable(struct node *n, enum cgroup_ctrl c, char *err, size_t errlen)
{
	char word[16];

	if (file_lists(n->parent, "cgroup.subtree_control", names[c]))
		return 0;
	snprintf(word, sizeof(word), "+%s", names[c]);
	if (put(n->parent, "cgroup.subtree_control", word, err, errlen) != 0)
		return -1;
	n->enabled |= 1U << c;
	return 0;
}

static int
limit_pids(const struct node *n, unsigned long pids, char *err, size_t errlen)
{
	char v[32];

	snprintf(v, sizeof(v), "%lu\n", pids);
	return put(n->dir, "pids.max", v, err, errlen);
}

/*
 * Memory and swap together: v1's memsw is memory plus swap, so equal to
 * the memory limit it leaves no swap outside the limit; v2 counts swap
 * apart, and none is allowed.  memsw and swap exist only with swap
 * accounting.  v1 children inherit oom_kill_disable: a sandbox over its
 * limit would hang rather than lose a process, so the OOM killer is on.
 */
static int
limit_memory(
    const struct node *n, unsigned long long bytes, char *err, size_t errlen)
{
	char v[32];

	snprintf(v, sizeof(v), "%llu\n", bytes);
	if (n->version == 2)
		return put(n->dir, "memory.max", v, err, errlen) != 0 ||
		        put_if_there(
		            n->dir, "memory.swap.max", "0\n", err, errlen) != 0
		    ? -1
		    : 0;
	return put(n->dir, "memory.limit_in_bytes", v, err, errlen) != 0 ||
	        put_if_there(n->dir, "memory.memsw.limit_in_bytes", v, err,
	            errlen) != 0 ||
	        put_if_there(
	            n->dir, "memory.oom_control", "0\n", err, errlen) != 0
	    ? -1
	    : 0;
}

/*
 * The node for controller C: one per directory (v2 holds both; so do v1
 * hierarchies mounted together).  Returns it, new or shared.
 */
static struct node *
node_for(struct cgroup *cg, const struct cgroup_where *w, enum cgroup_ctrl c,
    const char *name)
{
	struct node *n;
	int i;

	for (i = 0; i < cg->nn; i++)
		if (cg->n[i].version == w->version[c] &&
		    strcmp(cg->n[i].parent, w->dir[c]) == 0) {
			cg->n[i].move |= w->move[c];
			return &cg->n[i];
		}
	n = &cg->n[cg->nn++];
	n->move = w->move[c];
	n->version = w->version[c];
	snprintf(n->parent, sizeof(n->parent), "%s", w->dir[c]);
	snprintf(
	    n->dir, sizeof(n->dir), "%.*s/%s", PATH_MAX - 64, w->dir[c], name);
	snprintf(n->run, sizeof(n->run), "%.*s/%s-run", PATH_MAX - 64,
	    w->dir[c], name);
	return n;
}

/* Makes DIR: a stale one of an earlier pinhole-PID goes first. */
static int
make_dir(const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0755) != 0 &&
	    (errno != EEXIST || rmdir(dir) != 0 || mkdir(dir, 0755) != 0)) {
		ph_errf(err, errlen, "cgroup: %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* cgroup v2: pinhole run into its leaf, so its cgroup may enable memory. */
static int
move_self(struct node *n, char *err, size_t errlen)
{
	char v[32];

	n->self = getpid();
	snprintf(v, sizeof(v), "%d\n", (int)n->self);
	if (make_dir(n->run, err, errlen) != 0)
		return -1;
	if (put(n->run, "cgroup.procs", v, err, errlen) != 0) {
		(void)rmdir(n->run);
		return -1;
	}
	n->moved = 1;
	return 0;
}

/*
 * Undoes move_self and enable once the run's cgroup is gone: controllers
 * off, pinhole run (if alive) and the caller back, the leaf removed.
 */
static int
restore(struct node *n, char *err, size_t errlen)
{
	char v[32];
	int c, r = 0;

	for (c = 0; c < CGROUP_NCTRL; c++) {
		snprintf(v, sizeof(v), "-%s", names[c]);
		if ((n->enabled & 1U << c) &&
		    put(n->parent, "cgroup.subtree_control", v, err, errlen) ==
		        0)
			n->enabled &= ~(1U << c);
	}
	if (!n->moved)
		return n->enabled != 0 ? -1 : 0;
	snprintf(v, sizeof(v), "%d\n", (int)n->self);
	if (put(n->parent, "cgroup.procs", v, err, errlen) != 0 &&
	    errno != ESRCH)
		r = -1;
	snprintf(v, sizeof(v), "%d\n", (int)getpid());
	if (r == 0 && getpid() != n->self &&
	    put(n->parent, "cgroup.procs", v, err, errlen) != 0)
		r = -1;
	if (r == 0 && rmdir(n->run) != 0) {
		ph_errf(err, errlen, "cgroup: cannot remove %s: %s", n->run,
		    strerror(errno));
		r = -1;
	}
	if (r == 0)
		n->moved = 0;
	return r;
}

static int
make_node(struct node *n, unsigned long pids, unsigned long long memory,
    char *err, size_t errlen)
{
	int r = -1;

	if (n->move && move_self(n, err, errlen) != 0)
		goto out;
	if (n->version == 2 &&
	    (((n->ctrls & 1U << CGROUP_PIDS) &&
	         enable(n, CGROUP_PIDS, err, errlen) != 0) ||
	        ((n->ctrls & 1U << CGROUP_MEMORY) &&
	            enable(n, CGROUP_MEMORY, err, errlen) != 0)))
		goto out;
	if (make_dir(n->dir, err, errlen) != 0)
		goto out;
	n->made = 1;
	if ((n->ctrls & 1U << CGROUP_PIDS) &&
	    limit_pids(n, pids, err, errlen) != 0)
		goto out;
	if ((n->ctrls & 1U << CGROUP_MEMORY) &&
	    limit_memory(n, memory, err, errlen) != 0)
		goto out;
	r = 0;
out:
	return r;
}

struct cgroup *
cgroup_create(const struct cgroup_where *w, const char *name,
    unsigned long pids, unsigned long long memory, char *err, size_t errlen)
{
	struct cgroup *cg = xcalloc(1, sizeof(*cg));
	unsigned long long want[CGROUP_NCTRL] = {pids, memory};
	int c, i;

	cg->keeper_fd = -1;
	for (c = 0; c < CGROUP_NCTRL; c++) {
		if (want[c] > 0)
			cg->asked |= 1U << c;
		if (want[c] > 0 && w->version[c] != 0)
			node_for(cg, w, (enum cgroup_ctrl)c, name)->ctrls |= 1U
			    << c;
	}
	for (i = 0; i < cg->nn; i++)
		if (make_node(&cg->n[i], pids, memory, err, errlen) != 0)
			goto fail;
	return cg;
fail:
	(void)cgroup_remove(cg, NULL, 0);
	free(cg);
	return NULL;
}

int
cgroup_has(const struct cgroup *cg, enum cgroup_ctrl c)
{
	int i;

	for (i = 0; cg != NULL && i < cg->nn; i++)
		if (cg->n[i].ctrls & 1U << c)
			return 1;
	return 0;
}

void
cgroup_describe(const struct cgroup *cg, const struct cgroup_where *w,
    char *buf, size_t len)
{
	size_t l = 0;
	int i, c;

	buf[0] = '\0';
	for (i = 0; i < cg->nn && l < len; i++) {
		l += (size_t)snprintf(buf + l, len - l, "%sv%d %s%s in %s",
		    l ? ", " : "", cg->n[i].version,
		    cg->n[i].ctrls & 1U << CGROUP_PIDS ? "pids" : "",
		    cg->n[i].ctrls == 3U                       ? " and memory"
		        : cg->n[i].ctrls & 1U << CGROUP_MEMORY ? "memory"
		                                               : "",
		    cg->n[i].dir);
		if (cg->n[i].moved && l < len)
			l += (size_t)snprintf(buf + l, len - l,
			    "; pinhole run waits in %s", cg->n[i].run);
	}
	for (c = 0; c < CGROUP_NCTRL && l < len; c++)
		if ((cg->asked & 1U << c) &&
		    !cgroup_has(cg, (enum cgroup_ctrl)c))
			l += (size_t)snprintf(buf + l, len - l,
			    "%sno %s cgroup (%s)", l ? "; " : "", names[c],
			    w->why[c]);
	if (l == 0)
		snprintf(buf, len, "none (no limit asked)");
}

int
cgroup_attach(struct cgroup *cg, pid_t pid, char *err, size_t errlen)
{
	char v[32];
	int i;

	snprintf(v, sizeof(v), "%d\n", (int)pid);
	for (i = 0; i < cg->nn; i++)
		if (put(cg->n[i].dir, "cgroup.procs", v, err, errlen) != 0)
			return -1;
	return 0;
}

/* --- removing ----------------------------------------------------------- */

/* SIGKILL to every process still listed in N. */
static void
kill_rest(const struct node *n)
{
	char *text = read_file(n->dir, "cgroup.procs"), *t, *save = NULL;
	long pid;

	for (t = text ? strtok_r(text, "\n", &save) : NULL; t != NULL;
	     t = strtok_r(NULL, "\n", &save))
		if ((pid = strtol(t, NULL, 10)) > 1)
			(void)kill((pid_t)pid, SIGKILL);
	free(text);
}

/* Removes N: EBUSY while the kernel still counts tasks, so bounded tries. */
static int
remove_node(struct node *n, char *err, size_t errlen)
{
	const struct timespec pause = {0, REMOVE_PAUSE_NS};
	int i, e = EBUSY;

	for (i = 0; n->made && i < REMOVE_TRIES && e == EBUSY; i++) {
		if (i > 0)
			(void)nanosleep(&pause, NULL);
		kill_rest(n);
		if (rmdir(n->dir) == 0 || errno == ENOENT)
			n->made = 0;
		else
			e = errno;
	}
	if (n->made && err != NULL)
		ph_errf(err, errlen, "cgroup: cannot remove %s: %s", n->dir,
		    strerror(e));
	/* Never while the run's cgroup may hold a process. */
	if (!n->made && restore(n, err, errlen) != 0)
		return -1;
	return n->made ? -1 : 0;
}

int
cgroup_remove(struct cgroup *cg, char *err, size_t errlen)
{
	char later[PATH_MAX + 64]; /* the first failure is the one said */
	int i, r = 0;

	for (i = 0; cg != NULL && i < cg->nn; i++)
		if (remove_node(&cg->n[i], r == 0 ? err : later,
		        r == 0 ? errlen : sizeof(later)) != 0)
			r = -1;
	return r;
}

/* The keeper: waits for end of file on FD, removes CG, says what failed. */
static void __attribute__((noreturn)) keeper_main(struct cgroup *cg, int fd)
{
	char buf[1], err[PATH_MAX + 64];
	ssize_t n;

	if (fd != 3 && (dup2(fd, 3) != 3 || close(fd) != 0))
		_exit(1);
	(void)close_range(4, ~0U, 0);
	(void)prctl(PR_SET_NAME, "pinhole-cgroup", 0, 0, 0);
	/* Whoever reads pinhole run's output to its end must not wait for us. */
	if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0) {
		(void)dup2(fd, 0);
		(void)dup2(fd, 1);
		close(fd);
	}
	do
		n = read(3, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
	if (cgroup_remove(cg, err, sizeof(err)) != 0) {
		fprintf(stderr, "pinhole: %s\n", err);
		_exit(1);
	}
	_exit(0);
}

int
cgroup_keep(struct cgroup *cg, char *err, size_t errlen)
{
	int p[2];

	if (cg->nn == 0)
		return 0;
	if (pipe2(p, O_CLOEXEC) != 0) {
		ph_errf(
		    err, errlen, "cgroup keeper: pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	if ((cg->keeper = fork()) < 0) {
		ph_errf(
		    err, errlen, "cgroup keeper: fork: %s", strerror(errno));
		cg->keeper = 0;
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (cg->keeper == 0) {
		close(p[1]);
		keeper_main(cg, p[0]);
	}
	close(p[0]);
	cg->keeper_fd = p[1];
	return 0;
}

void
cgroup_free(struct cgroup *cg)
{
	char err[PATH_MAX + 64];
	int st;

	if (cg == NULL)
		return;
	if (cg->keeper > 0) {
		close(cg->keeper_fd);
		while (waitpid(cg->keeper, &st, 0) < 0 && errno == EINTR)
			;
	} else if (cgroup_remove(cg, err, sizeof(err)) != 0)
		fprintf(stderr, "pinhole: %s\n", err);
	free(cg);
}
