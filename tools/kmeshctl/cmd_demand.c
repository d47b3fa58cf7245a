/* cmd_demand.c — `kmeshctl demand KEY...`: Address keys an xDS agent on demand (--xds-on-demand)
 * asks istiod for now, before this node's pods use them: "<namespace>/<hostname>" for a service
 * (istiod sends it and its workloads), "<network>/<ip>" for an address (an empty network is the
 * default one: "/10.0.0.5"). Prints how many were new; exits 1 with the agent's reason when it
 * refused any. */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <string.h>

#define MAX_KEYS 4096 /* the agent's bound per request */

static const char usage[] =
	"usage: kmeshctl demand KEY...\n"
	"  ask istiod, through an xDS agent started on demand (kmesh-xds-agent --help), for these\n"
	"  Address keys now rather than when this node first uses them:\n"
	"    NAMESPACE/HOSTNAME   a service and its workloads (e.g. default/web.default.svc.cluster.local)\n"
	"    NETWORK/IP           whatever holds that address (an empty network is the default: /10.0.0.5)\n"
	"  At most 4096 keys. Exits 1 when the agent refused any (malformed, or past its bound of\n"
	"  keys); the others are demanded.\n";

int km_cmd_demand(const struct km_ctl *ctl, int argc, char **argv)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__Demand d = KMESH__IPC__DEMAND__INIT;
	char err[2048] = "";

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (argc < 1 || argc > MAX_KEYS) {
		fputs(usage, stderr);
		return 2;
	}
	d.n_keys = (size_t)argc;
	d.keys = argv;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_DEMAND;
	req.demand = &d;
	if (km_proc_call(ctl, KM_PROC_XDS_AGENT, &req, &rep, err, sizeof(err)) != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return 1;
	}
	{
		json_t *rows = json_pack("[{s:s, s:I, s:s}]", "process", "xds-agent", "new",
					 (json_int_t)rep->reply->applied, "result",
					 rep->reply->message ? rep->reply->message : "");

		km_out_print(stdout, rows, ctl->format);
		json_decref(rows);
	}
	km_msg_free(rep);
	return 0;
}
