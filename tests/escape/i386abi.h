/*
 * i386abi.h: is there an i386 system call ABI on this kernel at all?
 * Shared by the probers (tests/escape/NAME.c, on x86_64).  A kernel built
 * without IA32 emulation has none: int $0x80 then kills the caller with
 * SIGSEGV, so the i386 attempts would kill the prober before it printed
 * anything.  The question is asked in a child; the answer is printed, so
 * that the scenario decides (and checks that it matches the host's).
 */
#ifndef PROBE_I386ABI_H
#define PROBE_I386ABI_H

#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define I386_ABI_ABSENT                                                        \
	"i386 ABI: absent (the kernel has no IA32 emulation): int $0x80 "      \
	"kills "                                                               \
	"the caller"

/*
 * The child: getpid (20 on i386) through int $0x80, no core file left,
 * and SIGSEGV's default action (a sanitizer's handler would exit instead).
 */
static void
i386_abi_child(void)
{
	struct rlimit nocore = {0, 0};
	long r;

	signal(SIGSEGV, SIG_DFL);
	setrlimit(RLIMIT_CORE, &nocore);
	__asm__ volatile("int $0x80"
	                 : "=a"(r)
	                 : "a"(20L)
	                 : "memory", "r8", "r9", "r10", "r11");
	_exit(r == (long)getpid() ? 0 : 1);
}

/*
 * 1 when int $0x80 works, 0 when it kills the caller with SIGSEGV; asked
 * once, and said once: "i386 ABI: present", I386_ABI_ABSENT, or "i386
 * ABI: unclear (...)" (counted as present: the i386 attempts are then
 * made and the scenario sees what they do).
 */
static int
i386_abi(void)
{
	static int known = -1;
	pid_t pid;
	int st = 0;

	if (known >= 0)
		return known;
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		i386_abi_child();
	known = 1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		printf("i386 ABI: unclear (no child to ask)\n");
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) {
		known = 0;
		printf("%s\n", I386_ABI_ABSENT);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		printf("i386 ABI: present\n");
	else
		printf("i386 ABI: unclear (child status %d)\n", st);
	fflush(stdout);
	return known;
}

#endif
