/*
 * broker.c: pinhole proxy --broker (broker.h).
 *
 * SCAFFOLD (issue 13).
 */
#include "cli/broker.h"
#include "common/log.h"

int
broker_main(const struct broker_opts *o)
{
	log_warnx("proxy: --broker %s: not implemented yet", o->path);
	return 1;
}
