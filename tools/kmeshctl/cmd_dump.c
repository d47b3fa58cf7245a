/* cmd_dump.c — `kmeshctl dump tables|xds|policies|ipsec|certs|tunnels`: the map writer's BPF tables (rows
 * turned to JSON from their protobuf descriptors), and the agents' own dumps. Tables print one
 * section per table; the agents' dumps print their lists as tables, and whole as JSON or YAML. */
#include "tools/kmeshctl/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kmeshctl/pb_json.h"

static const char usage[] =
	"usage: kmeshctl dump tables [--table NAME] [--max-rows N (default 100000)]\n"
	"       kmeshctl dump xds | policies | ipsec | certs | tunnels\n"
	"  tables:   the map writer's BPF tables, a section each (NAME: manage, frontend, service,\n"
	"            endpoint, backend, port_override, authz_stats, ipsec_peer, ipsec_cidr)\n"
	"  xds:      the xDS agent's services and workloads, and its istiod connection (json/yaml)\n"
	"  policies: the compiled authorization policies, with what each allowed and denied\n"
	"  ipsec:    the IPsec agent's keys and peers\n"
	"  certs:    the tunnel's workload certificates (identity, state, serial, validity, next\n"
	"            renewal; never a key) and the enrolled pods they are for\n"
	"  tunnels:  the tunnel's pool of HBONE connections out (peer, source and destination\n"
	"            identities, state, streams open and in all, age, bytes of ended streams)\n";

static const char *const tables[] = { "", "manage", "frontend", "service", "endpoint", "backend",
				      "port_override", "authz_stats", "ipsec_peer", "ipsec_cidr" };
#define N_TABLES ((int)(sizeof(tables) / sizeof(tables[0])))

/* A TableOp's row: the one member of its oneof, without the op's kind. */
static json_t *row_of(const Kmesh__Ipc__TableOp *op)
{
	json_t *o = km_pb_json(&op->base), *row = NULL;
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v)
		if (strcmp(k, "kind"))
			row = json_incref(v);
	json_decref(o);
	return row ? row : json_object();
}

/* A table's rows, at most max_rows (0: DUMP_ROWS), read a page at a time (the map writer sends
 * at most 100,000 rows a reply and reads each page off its loop). */
#define DUMP_ROWS 100000u
#define DUMP_PAGE 100000u

static json_t *dump_table(const struct km_ctl *ctl, int t, uint32_t max_rows, json_t **stats,
			  int *truncated, char *err, size_t errlen)
{
	json_t *rows = json_array();
	uint8_t *after = NULL;
	size_t after_len = 0, got = 0;
	int more = 1;

	if (!max_rows)
		max_rows = DUMP_ROWS;
	while (more && got < max_rows) {
		km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep;
		Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;
		const Kmesh__Ipc__DumpReply *r;
		size_t page, before;

		d.table = (Kmesh__Ipc__Table)t;
		d.max_rows = max_rows - got < DUMP_PAGE ? (uint32_t)(max_rows - got) : DUMP_PAGE;
		d.after.data = after;
		d.after.len = after_len;
		req.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
		req.dump = &d;
		if (km_proc_call(ctl, KM_PROC_MAP_WRITER, &req, &rep, err, errlen) != 0)
			goto fail;
		if (rep->reply->body_case != KMESH__IPC__REPLY__BODY_DUMP) {
			snprintf(err, errlen, "kmesh-map-writer answered the dump of %s without rows",
				 tables[t]);
			km_msg_free(rep);
			goto fail;
		}
		r = rep->reply->dump;
		page = r->n_manage + r->n_authz_stats + r->n_rows;
		before = got;
		/* at most max_rows in all (a page of a hash table may end a bucket past it) */
		for (size_t i = 0; i < r->n_manage && got < max_rows; i++, got++)
			json_array_append_new(rows, km_pb_json(&r->manage[i]->base));
		for (size_t i = 0; i < r->n_authz_stats && got < max_rows; i++, got++)
			json_array_append_new(rows, km_pb_json(&r->authz_stats[i]->base));
		for (size_t i = 0; i < r->n_rows && got < max_rows; i++, got++)
			json_array_append_new(rows, row_of(r->rows[i]));
		if (got - before < page)
			*truncated = 1; /* rows left out */
		if (r->stats && stats) {
			json_decref(*stats);
			*stats = km_pb_json(&r->stats->base);
		}
		/* the next page starts where this one's `next` says (none: the table is read
		 * whole; an empty page: nothing more will come) */
		more = r->truncated && r->next.len && page;
		if (r->truncated && (!more || got >= max_rows))
			*truncated = 1;
		free(after);
		after = NULL;
		after_len = 0;
		if (more && !(after = malloc(r->next.len))) {
			snprintf(err, errlen, "out of memory");
			km_msg_free(rep);
			goto fail;
		}
		if (more) {
			memcpy(after, r->next.data, r->next.len);
			after_len = r->next.len;
		}
		km_msg_free(rep);
	}
	free(after);
	return rows;
fail:
	free(after);
	json_decref(rows);
	return NULL;
}

static int dump_tables(const struct km_ctl *ctl, int argc, char **argv)
{
	const char *only = NULL;
	unsigned long max_rows = 0;
	json_t *doc, *stats = NULL;
	int truncated = 0;
	char err[512];

	for (int i = 0; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--table") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--max-rows") && i + 1 < argc) {
			max_rows = strtoul(argv[++i], &end, 10);
			if (!*argv[i] || *end || max_rows > 0xffffffffUL) {
				fputs(usage, stderr);
				return 2;
			}
		} else {
			fputs(usage, stderr);
			return 2;
		}
	}
	if (only) {
		int t;

		for (t = 1; t < N_TABLES && strcmp(tables[t], only); t++)
			;
		if (t == N_TABLES) {
			fprintf(stderr, "kmeshctl: no table '%s'\n%s", only, usage);
			return 2;
		}
	}
	doc = json_object();
	for (int t = 1; t < N_TABLES; t++) {
		json_t *rows;

		if (only && strcmp(tables[t], only))
			continue;
		rows = dump_table(ctl, t, (uint32_t)max_rows, &stats, &truncated, err, sizeof(err));
		if (!rows) {
			fprintf(stderr, "kmeshctl: %s\n", err);
			json_decref(doc);
			json_decref(stats);
			return 1;
		}
		json_object_set_new(doc, tables[t], rows);
	}
	if (stats) /* the map writer's counters, as one row */
		json_object_set_new(doc, "stats", json_pack("[o]", stats));
	km_out_print(stdout, doc, ctl->format);
	if (truncated)
		fprintf(stderr, "kmeshctl: some tables had more rows than shown (see --max-rows)\n");
	json_decref(doc);
	return 0;
}

/* An agent's dump (or its member part): whole as JSON/YAML; as a table, the lists named by
 * sections, triples of a title, an object key ("" for the top) and the list's key. */
static int dump_agent(const struct km_ctl *ctl, enum km_proc p, const char *part,
		      const char *const *sections)
{
	char err[512];
	json_t *d = km_proc_agent_dump(ctl, p, 0, err, sizeof(err)), *top, *doc;

	if (!d) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return 1;
	}
	top = part ? json_object_get(d, part) : d;
	if (!top) {
		fprintf(stderr, "kmeshctl: kmesh-%s's dump has no '%s'\n", km_proc_name(p), part);
		json_decref(d);
		return 1;
	}
	if (ctl->format != KM_OUT_TABLE) {
		km_out_print(stdout, top, ctl->format);
		json_decref(d);
		return 0;
	}
	doc = json_object();
	for (size_t i = 0; sections[i]; i += 3) {
		json_t *parent = *sections[i + 1] ? json_object_get(top, sections[i + 1]) : top;
		json_t *list = json_object_get(parent, sections[i + 2]);

		json_object_set_new(doc, sections[i], json_is_array(list) ? json_incref(list)
									   : json_array());
	}
	km_out_print(stdout, doc, ctl->format);
	json_decref(doc);
	json_decref(d);
	return 0;
}

int km_cmd_dump(const struct km_ctl *ctl, int argc, char **argv)
{
	static const char *const xds[] = { "services", "model", "service_list", "workloads", "model",
					   "workload_list", "policies", "model", "policy_list", NULL };
	static const char *const policies[] = { "compiled", "", "compiled", NULL };
	static const char *const ipsec[] = { "keys", "", "keys", "peers", "", "peers", NULL };
	static const char *const certs[] = { "certificates", "", "certs", "pods", "", "pods", NULL };
	static const char *const tunnels[] = { "tunnels", "", "tunnels", NULL };

	if (km_cmd_wants_help(argc, argv, usage))
		return 0;
	if (argc < 1) {
		fputs(usage, stderr);
		return 2;
	}
	if (!strcmp(argv[0], "tables"))
		return dump_tables(ctl, argc - 1, argv + 1);
	if (argc == 1 && !strcmp(argv[0], "xds"))
		return dump_agent(ctl, KM_PROC_XDS_AGENT, NULL, xds);
	if (argc == 1 && !strcmp(argv[0], "policies"))
		return dump_agent(ctl, KM_PROC_XDS_AGENT, "authz", policies);
	if (argc == 1 && !strcmp(argv[0], "ipsec"))
		return dump_agent(ctl, KM_PROC_IPSEC_AGENT, NULL, ipsec);
	if (argc == 1 && !strcmp(argv[0], "certs"))
		return dump_agent(ctl, KM_PROC_TUNNEL, NULL, certs);
	if (argc == 1 && !strcmp(argv[0], "tunnels"))
		return dump_agent(ctl, KM_PROC_TUNNEL, NULL, tunnels);
	fputs(usage, stderr);
	return 2;
}
