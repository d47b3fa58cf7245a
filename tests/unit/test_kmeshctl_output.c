/* test_kmeshctl_output.c — kmeshctl's one writer (tools/kmeshctl/output.c) and the protobuf to
 * JSON conversion of table rows (pb_json.c): exact text for each format. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kmesh_ipc.pb-c.h"
#include "tools/kmeshctl/output.h"
#include "tools/kmeshctl/pb_json.h"
#include "tools/kmeshctl/remote.h"

static char *render(const char *json, enum km_out_format fmt)
{
	json_t *doc = json_loads(json, JSON_DECODE_ANY, NULL);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(doc);
	assert_non_null(f);
	km_out_print(f, doc, fmt);
	fclose(f);
	json_decref(doc);
	return buf;
}

static void expect(const char *json, enum km_out_format fmt, const char *want)
{
	char *got = render(json, fmt);

	assert_string_equal(got, want);
	free(got);
}

static void test_table(void **state)
{
	(void)state;
	/* columns in the order keys first appear; a missing cell is empty; nested as JSON */
	expect("[{\"process\": \"map-writer\", \"pid\": 7}, {\"process\": \"x\", \"err\": [1]}]",
	       KM_OUT_TABLE,
	       "PROCESS     PID  ERR\n"
	       "map-writer  7    \n"
	       "x                [1]\n");
	expect("{\"a\": [{\"k\": 1}], \"b\": []}", KM_OUT_TABLE, "a:\nK\n1\n\nb:\n(none)\n");
	expect("{\"spi\": 2, \"node\": \"n\"}", KM_OUT_TABLE, "KEY   VALUE\nspi   2\nnode  n\n");
}

static void test_yaml(void **state)
{
	(void)state;
	expect("{\"a\": 1, \"b\": \"x: y\", \"c\": [{\"d\": true, \"e\": null}, 3], \"f\": {}, \"g\": []}",
	       KM_OUT_YAML,
	       "a: 1\n"
	       "b: \"x: y\"\n"
	       "c:\n"
	       "  - d: true\n"
	       "    e: null\n"
	       "  - 3\n"
	       "f: {}\n"
	       "g: []\n");
	/* plain as people write it (kind: Gateway, an image:tag, a/b paths), quoted where plain
	 * would read back as something else: booleans, null, numbers, dates, indicators, ": " */
	expect("{\"kind\": \"Gateway\", \"image\": \"ghcr.io/kmesh-net/waypoint:latest\", "
	       "\"sidecar.istio.io/proxyImage\": \"/p_a.t-h@1+2\"}", KM_OUT_YAML,
	       "kind: Gateway\nimage: ghcr.io/kmesh-net/waypoint:latest\nsidecar.istio.io/proxyImage: /p_a.t-h@1+2\n");
	expect("[\"yes\", \"No\", \"on\", \"y\", \"null\", \"True\", \"1.0\", \"0x1f\", \"2026-01-01\", "
	       "\"\", \"-x\", \"a:\", \"a #b\", \"*x\", \".inf\", \"a b\"]", KM_OUT_YAML,
	       "- \"yes\"\n- \"No\"\n- \"on\"\n- \"y\"\n- \"null\"\n- \"True\"\n- \"1.0\"\n"
	       "- \"0x1f\"\n- \"2026-01-01\"\n- \"\"\n- \"-x\"\n- \"a:\"\n- \"a #b\"\n- \"*x\"\n"
	       "- \".inf\"\n- \"a b\"\n");
	expect("[[1, 2]]", KM_OUT_YAML, "- \n  - 1\n  - 2\n");
	/* what YAML does not take raw (DEL, C1 controls, its own line breaks) is escaped, and a
	 * real keeps a '.' (YAML 1.1 reads 1e+20 as a string) */
	expect("{\"a\": 1e+20, \"s\": \"x\\u007fy\\u0085z\\u2028\"}", KM_OUT_YAML,
	       "a: 1.0e+20\ns: \"x\\x7Fy\\u0085z\\u2028\"\n");
}

static void test_json(void **state)
{
	(void)state;
	expect("{\"a\": [1]}", KM_OUT_JSON, "{\n  \"a\": [\n    1\n  ]\n}\n");
}

static void test_pb_json(void **state)
{
	Kmesh__Ipc__TableOp op = KMESH__IPC__TABLE_OP__INIT;
	Kmesh__Ipc__FrontendRow fe = KMESH__IPC__FRONTEND_ROW__INIT;
	uint8_t vip[4] = { 10, 96, 0, 1 };
	json_t *j;
	char *text;

	(void)state;
	fe.address.data = vip;
	fe.address.len = 4;
	fe.port = 80;
	fe.kind = KMESH__IPC__FRONTEND_KIND__FRONTEND_KIND_SERVICE;
	op.kind = KMESH__IPC__TABLE_OP__KIND__UPSERT;
	op.row_case = KMESH__IPC__TABLE_OP__ROW_FRONTEND;
	op.frontend = &fe;
	j = km_pb_json(&op.base);
	text = json_dumps(j, JSON_COMPACT);
	/* the oneof's one member; enums by name; an address as text */
	assert_string_equal(text, "{\"kind\":\"UPSERT\",\"frontend\":{\"address\":\"10.96.0.1\","
				  "\"port\":80,\"protocol\":0,\"kind\":\"FRONTEND_KIND_SERVICE\","
				  "\"upstream_id\":0,\"target_port\":0,\"flags\":0,\"pick_base\":0,"
				  "\"pick_count\":0}}");
	free(text);
	json_decref(j);
	{ /* a uint64 beyond JSON's signed integers: as text, not negative */
		Kmesh__Ipc__ManageRow m = KMESH__IPC__MANAGE_ROW__INIT;

		m.netns_cookie = UINT64_MAX;
		m.netns_path = "/run/netns/x";
		j = km_pb_json(&m.base);
		text = json_dumps(j, JSON_COMPACT);
		assert_string_equal(text, "{\"netns_cookie\":\"18446744073709551615\","
					  "\"netns_path\":\"/run/netns/x\",\"host_ifindex\":0}");
		free(text);
		json_decref(j);
	}
}

/* Several nodes' answers as one document: rows led by their node, tables merged per key, plain
 * objects a row each, a failed node left out, and answers of different shapes all kept. */
static void test_remote_merge(void **state)
{
	const char *nodes[] = { "n1", "n2", "n3" };
	json_t *docs[3];
	json_t *m;
	char *text;

	(void)state;
	docs[0] = json_loads("[{\"process\": \"a\"}, {\"process\": \"b\", \"node\": \"x\"}]", 0, NULL);
	docs[1] = NULL; /* failed */
	docs[2] = json_loads("[7]", 0, NULL);
	m = km_remote_merge(nodes, docs, 3);
	text = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(text, "[{\"node\":\"n1\",\"process\":\"a\"},{\"node\":\"n1\",\"process\":\"b\"},"
				  "{\"node\":\"n3\",\"value\":7}]");
	free(text);
	json_decref(m);
	for (int i = 0; i < 3; i++)
		json_decref(docs[i]);

	docs[0] = json_loads("{\"frontend\": [{\"k\": 1}], \"service\": []}", 0, NULL);
	docs[1] = json_loads("{\"frontend\": [{\"k\": 2}], \"backend\": [{\"k\": 3}]}", 0, NULL);
	docs[2] = json_loads("{\"state\": \"odd\"}", 0, NULL); /* another shape: kept under "other" */
	m = km_remote_merge(nodes, docs, 3);
	text = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(text, "{\"frontend\":[{\"node\":\"n1\",\"k\":1},{\"node\":\"n2\",\"k\":2}],"
				  "\"service\":[],\"backend\":[{\"node\":\"n2\",\"k\":3}],"
				  "\"other\":[{\"node\":\"n3\",\"state\":\"odd\"}]}");
	free(text);
	json_decref(m);
	for (int i = 0; i < 3; i++)
		json_decref(docs[i]);

	docs[0] = json_loads("{\"monitoring\": \"enabled\"}", 0, NULL);
	docs[1] = json_loads("{\"monitoring\": \"disabled\"}", 0, NULL);
	m = km_remote_merge(nodes, docs, 2);
	text = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(text, "[{\"node\":\"n1\",\"monitoring\":\"enabled\"},"
				  "{\"node\":\"n2\",\"monitoring\":\"disabled\"}]");
	free(text);
	json_decref(m);
	json_decref(docs[0]);
	json_decref(docs[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_yaml),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_pb_json),
		cmocka_unit_test(test_remote_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
