/* version.h — this build's version (git describe at build time, or "dev" outside a checkout),
 * which every process reports in its hello reply and its --version. */
#ifndef KM_SHARED_VERSION_H
#define KM_SHARED_VERSION_H

const char *km_version(void);

#endif
