/*
 * log.h: diagnostics for pinhole, in the style of relayd's log.h.
 *
 * Every line goes to stderr as "pinhole: message".  log_warn appends the
 * current errno text; the _x variants do not.  fatal and fatalx are for
 * start-up failures and broken invariants only, never for the data path.
 * Never pass a secret value to any of these.
 */
#ifndef PH_LOG_H
#define PH_LOG_H

#include <stdarg.h>

/* Exit status when pinhole itself fails before the command ran. */
#define LOG_EXIT_FAILURE 125

/* Set the program name printed before each line, and the verbosity (0-2). */
void log_init(const char *progname, int verbose);
int log_verbose(void);

void log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));
void fatalx(const char *, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));

#define log_warn_f(fmt, ...) log_warn("%s: " fmt, __func__, ##__VA_ARGS__)
#define log_warnx_f(fmt, ...) log_warnx("%s: " fmt, __func__, ##__VA_ARGS__)
#define log_info_f(fmt, ...) log_info("%s: " fmt, __func__, ##__VA_ARGS__)
#define log_debug_f(fmt, ...) log_debug("%s: " fmt, __func__, ##__VA_ARGS__)
#define fatal_f(fmt, ...) fatal("%s: " fmt, __func__, ##__VA_ARGS__)
#define fatalx_f(fmt, ...) fatalx("%s: " fmt, __func__, ##__VA_ARGS__)

#endif
