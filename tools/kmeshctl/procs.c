/* procs.c — see procs.h. */
#include "tools/kmeshctl/procs.h"

#include <stdio.h>
#include <string.h>

static const char *const names[KM_PROC_COUNT] = { "map-writer", "xds-agent", "ipsec-agent",
								 "tunnel" };

const char *km_proc_name(enum km_proc p)
{
	return p < KM_PROC_COUNT ? names[p] : "?";
}

int km_proc_parse(const char *name, enum km_proc *out)
{
	for (int i = 0; i < KM_PROC_COUNT; i++)
		if (!strcmp(name, names[i])) {
			*out = (enum km_proc)i;
			return 0;
		}
	return -1;
}

int km_proc_connect(const struct km_ctl *ctl, enum km_proc p, struct km_sync_client *cl, char *err,
		    size_t errlen)
{
	Kmesh__Ipc__Code code;
	char msg[256];
	int rc = km_sync_connect(cl, ctl->socket[p], KMESH__IPC__ROLE__ROLE_ADMIN, "kmeshctl",
				 ctl->timeout_ms, &code, msg, sizeof(msg));

	if (rc == 0)
		return 0;
	snprintf(err, errlen, "cannot reach kmesh-%s at %s: %s%s%s%s%s%s", km_proc_name(p),
		 ctl->socket[p], strerror(-rc), *msg ? ": " : "", msg,
		 *cl->version ? " (it runs " : "", cl->version, *cl->version ? ")" : "");
	return -1;
}

int km_proc_call(const struct km_ctl *ctl, enum km_proc p, km_envelope *req, km_envelope **reply,
		 char *err, size_t errlen)
{
	struct km_sync_client cl;
	int rc;

	*reply = NULL;
	if (km_proc_connect(ctl, p, &cl, err, errlen) != 0)
		return -1;
	rc = km_sync_call(&cl, req, reply);
	km_sync_close(&cl);
	if (rc != 0) {
		snprintf(err, errlen, "kmesh-%s at %s did not answer: %s", km_proc_name(p),
			 ctl->socket[p], strerror(-rc));
		return -1;
	}
	if ((*reply)->reply->code != KMESH__IPC__CODE__OK) {
		snprintf(err, errlen, "kmesh-%s: %s: %s", km_proc_name(p),
			 km_msg_code_name((*reply)->reply->code), (*reply)->reply->message);
		km_msg_free(*reply);
		*reply = NULL;
		return -1;
	}
	return 0;
}

json_t *km_proc_hellos(const struct km_ctl *ctl, int *unreachable)
{
	json_t *rows = json_array();

	*unreachable = 0;
	for (int p = 0; p < KM_PROC_COUNT; p++) {
		struct km_sync_client cl;
		char err[512];

		if (km_proc_connect(ctl, (enum km_proc)p, &cl, err, sizeof(err)) != 0) {
			json_array_append_new(rows, json_pack("{s:s, s:s, s:s}", "process",
							      km_proc_name((enum km_proc)p), "socket",
							      ctl->socket[p], "error", err));
			(*unreachable)++;
			continue;
		}
		json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:s, s:I}", "process",
						      km_proc_name((enum km_proc)p), "socket",
						      ctl->socket[p], "version", cl.version,
						      "log_level", cl.log_level, "pid",
						      (json_int_t)cl.pid));
		km_sync_close(&cl);
	}
	return rows;
}

int km_proc_print_rows(const struct km_ctl *ctl, json_t *rows, int unreachable)
{
	km_out_print(stdout, rows, ctl->format);
	json_decref(rows);
	if (unreachable < KM_PROC_COUNT)
		return 0;
	fprintf(stderr, "kmeshctl: no kmesh process answered (see the error of each)\n");
	return 1;
}

json_t *km_proc_agent_dump(const struct km_ctl *ctl, enum km_proc p, unsigned max_items, char *err,
			   size_t errlen)
{
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
	Kmesh__Ipc__AgentDumpRequest d = KMESH__IPC__AGENT_DUMP_REQUEST__INIT;
	json_error_t jerr;
	json_t *j;

	d.max_items = max_items;
	req.body_case = KMESH__IPC__ENVELOPE__BODY_AGENT_DUMP;
	req.agent_dump = &d;
	if (km_proc_call(ctl, p, &req, &rep, err, errlen) != 0)
		return NULL;
	j = rep->reply->body_case == KMESH__IPC__REPLY__BODY_JSON
		    ? json_loads(rep->reply->json, 0, &jerr) : NULL;
	if (!j)
		snprintf(err, errlen, "kmesh-%s sent no JSON dump", km_proc_name(p));
	km_msg_free(rep);
	return j;
}
