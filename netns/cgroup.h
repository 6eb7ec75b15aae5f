/*
 * cgroup.h: a cgroup of its own for the sandbox, where the caller may make
 * one, so that --limit-pids and --limit-memory bind the sandbox as a
 * whole (the rlimits of limits.h bind a user or a process).
 *
 * Each controller (pids, memory) is looked for on its own: in cgroup v2
 * when the caller's cgroup ("0::PATH" in /proc/self/cgroup) is delegated
 * to it (the directory, cgroup.procs and cgroup.subtree_control writable,
 * the controller in cgroup.controllers) and is the root or holds pinhole
 * run alone (which then moves into a leaf of its own for the run: see
 * cgroup.c), else in the cgroup v1 hierarchy
 * that has it when the caller's cgroup there is writable.  The run's
 * cgroup is a child of the caller's, named pinhole-PID; pinhole run
 * writes the sandbox's first process into it before that process can
 * fork, and a keeper process removes it after the run, once nothing in
 * it is left.
 */
#ifndef PH_CGROUP_H
#define PH_CGROUP_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>

enum cgroup_ctrl {
	CGROUP_PIDS,
	CGROUP_MEMORY,
	CGROUP_NCTRL,
};

/* Where the caller may make a cgroup, per controller. */
struct cgroup_where {
	int version[CGROUP_NCTRL]; /* 1 or 2; 0: none usable */
	int move[CGROUP_NCTRL]; /* v2: pinhole run must leave its cgroup */
	char dir[CGROUP_NCTRL][PATH_MAX]; /* the caller's cgroup directory */
	char why[CGROUP_NCTRL][256]; /* when version is 0: why not */
};

struct cgroup;

/* "pids" or "memory". */
const char *cgroup_ctrl_name(enum cgroup_ctrl);

/*
 * From the text of /proc/PID/cgroup: the path of the cgroup that has
 * controller CTRL (a v1 line "N:a,CTRL,b:PATH"), or with CTRL NULL the
 * v2 one ("0::PATH").  Returns 0 with the path in OUT, or -1.
 */
int cgroup_proc_path(
    const char *proc_cgroup, const char *ctrl, char *out, size_t len);

/*
 * From the text of /proc/PID/mountinfo: the directory of cgroup path
 * CGPATH in a mount of the v1 hierarchy with controller CTRL, or with
 * CTRL NULL of cgroup2.  Returns 0 with it in OUT, or -1.
 */
int cgroup_mount_dir(const char *mountinfo, const char *ctrl,
    const char *cgpath, char *out, size_t len);

/*
 * Fills W from the texts of /proc/self/cgroup and /proc/self/mountinfo
 * (the directories they name are looked at for real: tests pass a fake
 * tree).  Never fails: a controller with no usable cgroup says why.
 */
void cgroup_find(
    const char *proc_cgroup, const char *mountinfo, struct cgroup_where *w);

/* cgroup_find for the calling process. */
void cgroup_find_self(struct cgroup_where *w);

/*
 * Makes the cgroup NAME under W's directories for each controller that
 * has a limit (PIDS processes, MEMORY bytes; 0: none) and a usable
 * cgroup, and writes the limits.  Returns it (perhaps with no controller
 * at all: cgroup_describe says), or NULL with the file and the reason in
 * ERR (nothing left made).
 */
struct cgroup *cgroup_create(const struct cgroup_where *w, const char *name,
    unsigned long pids, unsigned long long memory, char *err, size_t errlen);

/* Whether CG holds controller C. */
int cgroup_has(const struct cgroup *cg, enum cgroup_ctrl c);

/* One line on what CG limits and where, or why it does not. */
void cgroup_describe(const struct cgroup *cg, const struct cgroup_where *w,
    char *buf, size_t len);

/* Moves process PID into CG.  Returns 0, or -1 with ERR. */
int cgroup_attach(struct cgroup *cg, pid_t pid, char *err, size_t errlen);

/*
 * Kills what is left in CG and removes its directories, retrying a
 * bounded number of times while the kernel still counts exiting tasks.
 * Returns 0, or -1 with ERR (what could be removed is).
 */
int cgroup_remove(struct cgroup *cg, char *err, size_t errlen);

/*
 * Forks the keeper: a process outside the sandbox and outside whatever
 * pinhole run sheds later (capabilities, Landlock), which waits until
 * pinhole run ends or calls cgroup_free, then removes CG.  Returns 0, or
 * -1 with ERR.
 */
int cgroup_keep(struct cgroup *cg, char *err, size_t errlen);

/*
 * Frees CG; with a keeper, lets it remove CG and waits for it, otherwise
 * removes CG here.  NULL does nothing.
 */
void cgroup_free(struct cgroup *cg);

#endif /* PH_CGROUP_H */
