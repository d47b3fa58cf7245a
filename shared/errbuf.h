/* errbuf.h — writing an error message into a caller's buffer and failing in one expression:
 *   return km_errf(err, errlen, "port %u out of range", port);   // returns -1 */
#ifndef KM_SHARED_ERRBUF_H
#define KM_SHARED_ERRBUF_H

#include <stddef.h>

int km_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
