/* version.c — see version.h. The text comes from build/gen/km_version.h, rewritten by the build
 * only when it changes, so only this file is rebuilt for a new commit. */
#include "shared/version.h"

#include "km_version.h"

const char *km_version(void)
{
	return KM_VERSION;
}
