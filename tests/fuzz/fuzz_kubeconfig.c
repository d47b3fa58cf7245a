/* fuzz_kubeconfig.c — libFuzzer target for the YAML reader and the kubeconfig parser (a file
 * from the node, or an operator's ~/.kube/config): arbitrary bytes must parse or be refused
 * with a message, never crash, loop or blow up (aliases and deep nesting are refused). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/kube/kubeconfig.h"
#include "shared/kube/yaml_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct km_kubeconfig kc;
	char err[256];
	json_t *j;

	if (size > 65536)
		return 0;
	err[0] = '\0';
	j = km_yaml_load((const char *)data, size, err, sizeof(err));
	if (!j && !err[0])
		abort();
	json_decref(j);
	err[0] = '\0';
	/* relative file names resolve under a directory that does not exist */
	if (km_kubeconfig_parse((const char *)data, size, "/nonexistent-kmesh-fuzz", &kc, err,
				sizeof(err)) == 0) {
		if (!kc.server || strncmp(kc.server, "https://", 8))
			abort();
	} else if (!err[0]) {
		abort();
	}
	km_kubeconfig_free(&kc);
	return 0;
}
