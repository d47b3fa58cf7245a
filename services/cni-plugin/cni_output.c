/* cni_output.c — see cni_output.h. */
#include "services/cni-plugin/cni_output.h"

#include <stdarg.h>
#include <string.h>

const char *const km_cni_supported_versions[] = { "0.3.0", "0.3.1", "0.4.0", "1.0.0", NULL };

int km_cni_version_supported(const char *v)
{
	for (int i = 0; km_cni_supported_versions[i]; i++)
		if (!strcmp(v, km_cni_supported_versions[i]))
			return 1;
	return 0;
}

int km_cni_fail(struct km_cni_error *e, int code, const char *msg, const char *details_fmt, ...)
{
	va_list ap;

	e->code = code;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	va_start(ap, details_fmt);
	vsnprintf(e->details, sizeof(e->details), details_fmt, ap);
	va_end(ap);
	return -1;
}

void km_cni_print_error(FILE *out, const char *cni_version, const struct km_cni_error *e)
{
	json_t *o = json_pack("{s:s, s:i, s:s, s:s}", "cniVersion",
			      cni_version && km_cni_version_supported(cni_version)
				      ? cni_version
				      : KM_CNI_SPEC_VERSION,
			      "code", e->code, "msg", e->msg, "details", e->details);

	if (o) {
		json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
		fputc('\n', out);
		json_decref(o);
	}
	fflush(out);
}

void km_cni_print_version(FILE *out)
{
	json_t *arr = json_array(), *o;

	for (int i = 0; km_cni_supported_versions[i]; i++)
		json_array_append_new(arr, json_string(km_cni_supported_versions[i]));
	o = json_pack("{s:s, s:o}", "cniVersion", KM_CNI_SPEC_VERSION, "supportedVersions", arr);
	json_dumpf(o, out, JSON_PRESERVE_ORDER);
	fputc('\n', out);
	json_decref(o);
	fflush(out);
}

int km_cni_print_result(FILE *out, const json_t *result)
{
	if (json_dumpf(result, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
		return -1;
	fputc('\n', out);
	return fflush(out) == 0 ? 0 : -1;
}
