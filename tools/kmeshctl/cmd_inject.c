/* cmd_inject.c — `kmeshctl inject PROCESS FILE|-`: an event, as JSON, sent to a running agent
 * (Inject) and applied there exactly as one from its source: resources and removals for the
 * xDS agent (as from istiod), a KmeshNodeInfo watch event for the IPsec agent (as from the API
 * server). Prints what the agent applied and refused. */
#include "tools/kmeshctl/commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENT_BYTES (16u << 20)

static const char usage[] =
	"usage: kmeshctl inject PROCESS FILE|-\n"
	"  send an event (JSON, from FILE or stdin) to a running agent, applied as one from its\n"
	"  source would be:\n"
	"  xds-agent    as from istiod: {\"resources\": [{\"service\": {...}} | {\"workload\": {...}}\n"
	"               | {\"authorization\": {...}}, ...], \"removedResources\": [NAME, ...],\n"
	"               \"removedPolicies\": [\"NS/NAME\", ...]} (proto3 JSON of Istio's messages)\n"
	"  ipsec-agent  as from the API server: {\"type\": \"ADDED\"|\"MODIFIED\"|\"DELETED\",\n"
	"               \"object\": KmeshNodeInfo}, or a bare KmeshNodeInfo (ADDED)\n"
	"  Exits 1 when the agent refused the event or any resource in it (the others applied).\n";

/* The whole of f, NUL-terminated, at most MAX_EVENT_BYTES. NULL with err filled. */
static char *read_event(FILE *f, const char *name, size_t *lenp, char *err, size_t errlen)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);

	while (buf) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (n == 0) {
			if (ferror(f)) {
				snprintf(err, errlen, "cannot read %s: %s", name, strerror(errno));
				break;
			}
			buf[len] = '\0';
			*lenp = len;
			return buf;
		}
		if (len + 1 == cap) {
			char *p = cap >= MAX_EVENT_BYTES ? NULL : realloc(buf, cap * 2);

			if (!p) {
				snprintf(err, errlen, "%s is larger than %u bytes", name, MAX_EVENT_BYTES);
				break;
			}
			buf = p;
			cap *= 2;
		}
	}
	free(buf);
	if (!buf && !*err)
		snprintf(err, errlen, "out of memory");
	return NULL;
}

int km_cmd_inject(const struct km_ctl *ctl, int argc, char **argv)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__Inject in = KMESH__IPC__INJECT__INIT;
	char err[2048] = "";
	enum km_proc p;
	FILE *f;
	char *text;
	size_t len = 0;
	int rc;

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (argc != 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (km_proc_parse(argv[0], &p) != 0 || p == KM_PROC_MAP_WRITER) {
		fprintf(stderr, "kmeshctl: events go to xds-agent or ipsec-agent, not '%s'\n", argv[0]);
		return 2;
	}
	f = strcmp(argv[1], "-") ? fopen(argv[1], "r") : stdin;
	if (!f) {
		fprintf(stderr, "kmeshctl: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	text = read_event(f, argv[1], &len, err, sizeof(err));
	if (f != stdin)
		fclose(f);
	if (!text) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return 1;
	}
	if (strlen(text) != len) {
		fprintf(stderr, "kmeshctl: %s holds a NUL byte: not JSON\n", argv[1]);
		free(text);
		return 1;
	}
	in.json = text;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_INJECT;
	req.inject = &in;
	rc = km_proc_call(ctl, p, &req, &rep, err, sizeof(err));
	free(text);
	if (rc != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return 1;
	}
	{
		json_t *rows = json_pack("[{s:s, s:I, s:s}]", "process", km_proc_name(p), "applied",
					 (json_int_t)rep->reply->applied, "result",
					 rep->reply->message ? rep->reply->message : "");

		km_out_print(stdout, rows, ctl->format);
		json_decref(rows);
	}
	km_msg_free(rep);
	return 0;
}
