/*
 * run_broker.c: pinhole run --broker PATH, the launcher's side of a
 * broker (cli/broker.c): the connection, the REQUEST, the broker's
 * refusal said to the user.  After it, the conversation is run_engine.c's
 * and run_setup.c's, as with an engine of the run's own.
 *
 * SCAFFOLD (issue 13).
 */
#include "cli/run.h"
#include "common/log.h"

int
run_broker_connect(struct run *r)
{
	log_warnx("run: --broker %s: not implemented yet", r->broker);
	return -1;
}
