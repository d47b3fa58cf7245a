/* differential.h — the check of the differential fuzz targets (a hand-written reader against
 * protobuf-c): when the two disagree, say where, and stop. */
#ifndef KM_FUZZ_DIFFERENTIAL_H
#define KM_FUZZ_DIFFERENTIAL_H

#include <stdio.h>
#include <stdlib.h>

#define same(ok)                                                                                   \
	do {                                                                                       \
		if (!(ok)) {                                                                       \
			fprintf(stderr, "the readers differ: %s (line %d)\n", #ok, __LINE__);     \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
