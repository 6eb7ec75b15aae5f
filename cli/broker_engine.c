/*
 * broker_engine.c: one client of the broker, in its own process
 * (broker.h): the REQUEST, the grant, then a run's engine for its
 * sandbox.
 *
 * SCAFFOLD (issue 13).
 */
#include <stdlib.h>
#include <unistd.h>

#include "cli/broker.h"

void
broker_engine_main(const struct broker_opts *o, const struct policy *config,
    const struct broker_client *c)
{
	(void)o;
	(void)config;
	(void)close(c->conn);
	_exit(1);
}
