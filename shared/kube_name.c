/* kube_name.c — Kubernetes name checks (see kube_name.h). */
#include "shared/kube_name.h"

#include <string.h>

int km_kube_valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
			return 0;
	}
	return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}
