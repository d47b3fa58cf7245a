/* cni_output.h — what kmesh-cni writes to stdout, as the CNI specification (1.0.0) defines
 * it: the result (the previous plugin's, passed through unchanged), the VERSION answer, or an
 * error object {cniVersion, code, msg, details} with a non-zero exit. */
#ifndef KM_CNI_OUTPUT_H
#define KM_CNI_OUTPUT_H

#include <jansson.h>
#include <stdio.h>

/* CNI's well-known error codes, then ours (100 and up are plugin-specific). */
enum km_cni_code {
	KM_CNI_E_VERSION = 1,       /* incompatible CNI version */
	KM_CNI_E_FIELD = 2,         /* unsupported field in the network configuration */
	KM_CNI_E_CONTAINER = 3,     /* container unknown or does not exist */
	KM_CNI_E_ENV = 4,           /* invalid necessary environment variables */
	KM_CNI_E_IO = 5,            /* I/O failure */
	KM_CNI_E_DECODE = 6,        /* failed to decode content */
	KM_CNI_E_CONFIG = 7,        /* invalid network config */
	KM_CNI_E_TRY_LATER = 11,    /* try again later */
	KM_CNI_E_KUBE_API = 100,    /* the Kubernetes API did not answer as needed */
	KM_CNI_E_MAP_WRITER = 101,  /* the map writer is unreachable or refused the request */
	KM_CNI_E_NOT_ENROLLED = 102, /* CHECK: enrollment differs from what the rules say */
	KM_CNI_E_ENCRYPTION = 103,   /* IPsec is on and the pod's traffic cannot be encrypted */
};

struct km_cni_error {
	int code; /* 0: no error */
	char msg[256];
	char details[768];
};

/* Fill e and return -1: `return km_cni_fail(e, KM_CNI_E_CONFIG, "bad", "field %s", f);` */
int km_cni_fail(struct km_cni_error *e, int code, const char *msg, const char *details_fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define KM_CNI_SPEC_VERSION "1.0.0"
extern const char *const km_cni_supported_versions[];
int km_cni_version_supported(const char *v);

void km_cni_print_error(FILE *out, const char *cni_version, const struct km_cni_error *e);
void km_cni_print_version(FILE *out);
/* The result object, unchanged (key order kept). Returns 0, or -1 if stdout failed. */
int km_cni_print_result(FILE *out, const json_t *result);

#endif
